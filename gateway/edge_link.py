"""One session's edge WebSocket (RAWP §9.4), as the `FrameLink` a `ChatSession` reads.

Rules:

1. The socket is opened with a single-use ticket: the one `POST …/sessions` returned, or a
   fresh one from `POST /v1/edge/sessions/{id}/tickets` (A-22) for every later connection.
2. When the socket drops (network, master restart, 1013 "too slow", 1001 "going away") the link
   reconnects with a new ticket and `last_message_id` = the last frame it delivered, so the
   master replays what was missed (docs/edge-api.md). Waits between attempts grow from
   `backoff_s` to `max_backoff_s`, with jitter (tenacity), so gateways cut off together do not
   come back in step. A frame sent while the link is down waits for the
   reconnect. A frame written just before a socket dropped may never have arrived (a write
   into a dying socket does not fail), so frames sent in the last `RESEND_WINDOW_S` seconds
   before a drop are sent again on the new socket: the master de-duplicates control frames by
   `message_id` within the session (E-WS-11, A-25), so one that did arrive is not run twice.
   The window is short because a master that restarted has forgotten those ids.
3. Frames are de-duplicated by `message_id` (dps-profile §8): a replayed frame, or a greeting
   frame the master repeats on every connect, is delivered once.
4. The link ends for good (`receive` → None) when the session is gone: a new ticket is refused
   with 404 (TERMINATED sessions are unknown to the Edge API) or 403, or `close()` was called.
   A frame that does not parse is logged and skipped; the socket stays up.
5. The cursor (issue 14 §4) only moves on frames that came from the client: never on
   `session.history`, `node.*` or `session.error`, which the master makes itself (its
   `message_id`s are in no replay buffer, so reconnecting after one would replay everything
   kept). The greeting (`session.capabilities`, `tool.catalog.publish`) is the client's: the
   client remembers where each one stood in its stream and the master sends it only to a
   socket without a cursor, so it is a cursor like any other frame — the only one a session
   has before its first turn, and without it a gateway killed then would miss that turn.
   A client's `session.error` repeated in a replay is dropped by rule 3.
   `moves_cursor` is the rule; the in-memory cursor of rule 2 and the conversation store's
   durable one (gateway.sessions.live) both keep it. A link made after a gateway restart starts from
   the durable cursor (`last_message_id=`), so the master replays what followed it.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict, deque

import aiohttp
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, wait_exponential_jitter

from gateway.edge_client import EdgeApiError, EdgeClient
from rawp.clock import SYSTEM_CLOCK, Clock
from rawp.frames import SUBPROTOCOLS, Frame, FrameError, dump_frame, parse_frame

log = logging.getLogger(__name__)

GONE = (403, 404)  # a new ticket refused with these: the session has ended (rule 4)
MAX_FRAME_BYTES = 16 * 1024 * 1024
RESEND_WINDOW_S = 5.0
RESEND_MAX = 64
# Failures a reconnect attempt retries (rule 2); an EdgeApiError in GONE ends the link (rule 4).
RETRYABLE = (EdgeApiError, aiohttp.ClientError, OSError, TimeoutError)
MASTER_MADE = frozenset({"session.history", "session.error"})


def moves_cursor(frame: Frame) -> bool:
    """Rule 5: may `frame` become the session's cursor?"""
    return not (frame.type in MASTER_MADE or frame.type.startswith("node."))


def _retryable(exc: BaseException) -> bool:
    if isinstance(exc, EdgeApiError):
        return exc.status not in GONE
    return isinstance(exc, RETRYABLE)


class SeenIds:
    """Rule 3: the `message_id`s of the last `window` frames, oldest forgotten first. The
    gateway's one de-duplication point (the renderer trusts the link, gateway.sessions.session)."""

    def __init__(self, window: int = 10_000) -> None:
        self._window = window
        self._ids: OrderedDict[str, None] = OrderedDict()

    def first_time(self, message_id: str) -> bool:
        """True the first time `message_id` is seen within the window; remembers it."""
        if message_id in self._ids:
            return False
        self._ids[message_id] = None
        if len(self._ids) > self._window:
            self._ids.popitem(last=False)
        return True


class SessionLink:
    def __init__(
        self,
        edge: EdgeClient,
        subject: str,
        session_id: str,
        *,
        ticket: str | None = None,
        last_message_id: str | None = None,
        backoff_s: float = 0.2,
        max_backoff_s: float = 10.0,
        dedupe_window: int = 10_000,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.edge = edge
        self.subject = subject
        self.session_id = session_id
        self._ticket = ticket
        self._backoff = backoff_s
        self._max_backoff = max_backoff_s
        self._seen = SeenIds(dedupe_window)
        self._last_message_id = last_message_id  # rule 5: where a restarted gateway resumes
        self._ws: aiohttp.ClientWebSocketResponse | None = None
        self._connect_lock = asyncio.Lock()
        self._clock = clock
        self._recent: deque[tuple[float, str]] = deque(maxlen=RESEND_MAX)  # (sent at, text)
        self._closed = False
        self._gone = False
        self.connects = 0  # how many sockets this link has opened (tests, logs)

    @property
    def ended(self) -> bool:
        return self._closed or self._gone

    @property
    def closed_here(self) -> bool:
        """True when `close()` ended the link (not the session ending on the master)."""
        return self._closed and not self._gone

    # --- FrameLink ---------------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        """Its WebSocket to the master is open now (gateway.metrics reads this)."""
        return self._ws is not None and not self._ws.closed

    async def send(self, frame: Frame) -> None:
        text = dump_frame(frame)
        while not self.ended:
            ws = await self._socket()
            if ws is None:
                break
            try:
                await ws.send_str(text)
                self._recent.append((self._clock.monotonic(), text))
                return
            except (aiohttp.ClientError, ConnectionError, RuntimeError) as exc:
                log.info("session %s: send failed (%s); reconnecting", self.session_id, _safe(exc))
                await self._drop(ws)
        raise ConnectionError(f"session {self.session_id} has ended")

    async def receive(self) -> Frame | None:
        while not self.ended:
            ws = await self._socket()
            if ws is None:
                return None
            message = await ws.receive()
            if message.type in (aiohttp.WSMsgType.TEXT, aiohttp.WSMsgType.BINARY):
                frame = self._accept(message.data)
                if frame is not None:
                    return frame
                continue
            # CLOSE / CLOSED / ERROR: the socket is done; reconnect unless the session is (rule 2)
            log.info(
                "session %s: edge socket closed (%s %s)",
                self.session_id,
                ws.close_code,
                message.extra if isinstance(message.extra, str) else "",
            )
            await self._drop(ws)
        return None

    async def close(self) -> None:
        self._closed = True
        ws, self._ws = self._ws, None
        if ws is not None:
            await _close_quietly(ws)

    # --- internals ---------------------------------------------------------------------------

    def _accept(self, data: str | bytes) -> Frame | None:
        try:
            frame = parse_frame(data, max_size=MAX_FRAME_BYTES)
        except FrameError as exc:
            log.warning("session %s: unreadable frame skipped: %s", self.session_id, exc)
            return None
        if not self._seen.first_time(frame.message_id):
            return None  # rule 3
        if moves_cursor(frame):  # rule 5
            self._last_message_id = frame.message_id
        return frame

    async def _drop(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        if self._ws is ws:
            self._ws = None
        await _close_quietly(ws)

    async def _socket(self) -> aiohttp.ClientWebSocketResponse | None:
        """The open socket, connecting (and reconnecting with backoff) as needed."""
        async with self._connect_lock:
            if self._ws is not None and not self._ws.closed:
                return self._ws
            retrying = AsyncRetrying(
                retry=retry_if_exception(_retryable),
                wait=wait_exponential_jitter(
                    multiplier=self._backoff, max=self._max_backoff, jitter=self._backoff
                ),
                stop=lambda _: self.ended,  # close() ends the retries too
                before_sleep=self._retrying,
                reraise=True,
            )
            try:
                async for attempt in retrying:
                    with attempt:
                        if self.ended:
                            return None
                        ws = await self._connect()
                        try:
                            await self._resend(ws)
                        except BaseException:
                            await _close_quietly(ws)
                            raise
                        self._ws = ws
                        return ws
            except RETRYABLE as exc:
                # Only ends the retries when the session is gone (rule 4) or the link ended.
                if isinstance(exc, EdgeApiError) and exc.status in GONE:
                    log.info("session %s has ended: %s", self.session_id, exc.message)
                    self._gone = True
            return None

    def _retrying(self, state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        why = exc.message if isinstance(exc, EdgeApiError) else _safe(exc or Exception())
        log.info("session %s: reconnect failed: %s", self.session_id, why)

    async def _resend(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        """Rule 2: what went out just before the last drop goes out again."""
        since = self._clock.monotonic() - RESEND_WINDOW_S
        recent = [text for sent_at, text in self._recent if sent_at >= since]
        self._recent.clear()
        for text in recent:
            await ws.send_str(text)
            self._recent.append((self._clock.monotonic(), text))

    async def _connect(self) -> aiohttp.ClientWebSocketResponse:
        ticket, self._ticket = self._ticket, None
        if ticket is None:
            ticket = await self.edge.new_ticket(self.subject, self.session_id)  # rule 1
        url = self.edge.stream_url(self.session_id, ticket, self._last_message_id)
        try:
            ws = await self.edge.http.ws_connect(
                url, protocols=SUBPROTOCOLS, max_msg_size=MAX_FRAME_BYTES, heartbeat=30.0
            )
        except aiohttp.WSServerHandshakeError as exc:
            # 401: the ticket was spent or expired → the next attempt asks for a new one.
            raise EdgeApiError(exc.status, f"HTTP_{exc.status}", "edge socket refused") from None
        self.connects += 1
        return ws


async def _close_quietly(ws: aiohttp.ClientWebSocketResponse) -> None:
    """Close a socket that may already be broken: the link is done with it either way."""
    try:
        await ws.close()
    except (aiohttp.ClientError, OSError, RuntimeError) as exc:
        log.debug("closing an edge socket: %s", _safe(exc))


def _safe(exc: BaseException) -> str:
    """An error for the log without its URL: the stream URL carries the ticket (a credential)."""
    if isinstance(exc, aiohttp.ClientResponseError):
        return f"{type(exc).__name__} (HTTP {exc.status})"
    if isinstance(exc, aiohttp.ClientConnectorError):
        return f"cannot connect to {exc.host}:{exc.port}"
    return type(exc).__name__ if "ticket=" in str(exc) else str(exc) or type(exc).__name__
