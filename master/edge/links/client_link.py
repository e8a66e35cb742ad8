"""The master's WebSocket to a client for one session (RAWP §5.1, §5.3), kept up across blips.

Rules:

1. The master opens the link to `ws(s)://{client}/v1/ws/stream` with the ticket it gave the
   client in `session/init` (M-SESS-04) and pumps every client frame into the data plane.
   The socket goes to an address of the client checked by the §3.2 policy at that moment
   (`master.services.pinning`), on the first open and on every reattach.
2. When the link drops while the session should live, the session is DETACHED and the master
   reattaches: `session/init` with `reattach: true` and `last_message_id` = the last frame it
   relayed, then a new socket (backoff by tenacity). The client replays what followed that
   frame, so edges see a gap-free stream; they drop repeats by `message_id`.
3. Greeting frames of a socket (`session.capabilities`, `tool.catalog.publish`, then
   `session.history` on a reattach) are not in the client's replay buffer, so they do not
   move the cursor of rule 2; on a reattached socket the first two are not sent to edges
   again. One exception: while the master has no cursor yet (a new session, or a resume that
   knew none), the greeting becomes it. The client keeps a greeting's place (its buffer rule
   5), so a link that drops before any other frame has come is replayed from there, the
   frames the client had written into the dead socket included; with no cursor at all the
   client could only replay what it had not written, and a new session's first
   `session.turn.start` was lost that way (issue 32).
4. If the client is not back within the pinned `reattach_window`, or says the session is gone
   (404), or the window is 0, the session is TERMINATED.
5. `send` says True only once the frame is written to the client's socket (issue 14 §2: a
   delivery is acknowledged, not assumed). While the link is down a frame waits in a small
   queue and goes first after the reattach; if the link is not back within `deliver_within`
   seconds, or the queue is full, it is taken out again and `send` says False, so the edge is
   told `CLIENT_UNAVAILABLE` and may send it again with the same `message_id` (the client
   acts on a control `message_id` once: client session rule 6).
6. With several replicas, a link that drops asks first whether this replica still holds the
   session (`may_hold`, the relay's lease); if another does, it lets go instead of reattaching.
7. State is never assigned here: the link names the event (DETACH when it drops, ATTACH when it
   is back, TERMINATE by rule 4) and the session layer's `on_state` writes it as a conditional
   transition (§5, `rawp.session_state`). When the write is refused because the session is
   TERMINATED — a DELETE on another replica won the race — `on_state` says False and the link
   ends without reattaching: TERMINATED is final on every replica (issue 14 §5).
8. The link's loop is a child of its owner (a `runtime.tasks.TaskOwner` held by the session
   layer), which logs a failure with its traceback; `close()` cancels the loop and waits for it,
   and a cancellation of the caller passes through.
9. A client frame is relayed by the socket's reader itself, in the same turn of the event loop
   that read it (`DataPlane.from_client_now`, link_reader rule 7), whenever the loop is waiting
   for a frame with nothing of its own under way; otherwise — a frame that needs a wait (a
   `session.usage` and its database write, a shared relay without room), or any frame behind
   one — it goes through the socket's queue to the loop, so frames are relayed in the order
   they came. A failure there is the loop's: it ends the socket and is raised by the loop, as
   one in the loop itself would be (rule 8).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from tenacity import AsyncRetrying, retry_if_exception_type, wait_exponential_jitter
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI

from master.edge.links.dataplane import LATER, DataPlane
from master.edge.links.link_pings import LinkPings
from master.edge.links.link_reader import LinkConnection
from master.edge.live import RelayedSession
from master.services.pinning import connect_pinned
from master.services.session_start import SessionStarter
from rawp.clock import Clock
from rawp.errors import NotFound, RawpError
from rawp.frames import SUBPROTOCOLS
from rawp.session_state import SessionEvent
from runtime.logs import bind_session
from runtime.tasks import TaskOwner

log = logging.getLogger("rawp.master.edge.link")
# The close handshake with the client, at most: the master's stop closes every link at once
# and must end within the 10 s that Docker and systemd give a SIGTERM (issue 35).
CLOSE_SECONDS = 2.0

# Rule 7: write `event` for the session; True while it lives on, False once it is TERMINATED.
StateHook = Callable[[RelayedSession, SessionEvent, str], Awaitable[bool]]
GREETING = ("session.capabilities", "tool.catalog.publish")


async def _always() -> bool:
    return True


async def _nothing() -> None:
    return None


@dataclass(eq=False)  # compared by identity: two frames may have the same text
class _Pending:
    """An edge frame waiting for the link to come back (rule 5)."""

    text: str
    written: asyncio.Future[bool]


class LinkDown(Exception):
    """The client cannot be reached right now; try again."""


class SessionGone(Exception):
    """The session cannot come back (rule 4)."""


class ClientLink:
    def __init__(
        self,
        live: RelayedSession,
        *,
        plane: DataPlane,
        starter: SessionStarter,
        on_state: StateHook,
        clock: Clock,
        owner: TaskOwner,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        max_pending: int = 64,
        max_backoff: float = 5.0,
        deliver_within: float = 5.0,
        may_hold: Callable[[], Awaitable[bool]] | None = None,
        let_go: Callable[[], Awaitable[None]] | None = None,
        pings: LinkPings | None = None,
    ) -> None:
        self.live = live
        self._pings = pings  # the master's shared keepalive; None: websockets' own per socket
        self._plane = plane
        self._starter = starter
        self._on_state = on_state
        self._clock = clock
        self._owner = owner
        self._sleep = sleep
        self._max_backoff = max_backoff
        self._may_hold = may_hold or _always
        self._let_go = let_go or _nothing
        self._ws: ClientConnection | None = None
        self._connected = False
        self._closing = False
        self._pending: deque[_Pending] = deque()
        self._max_pending = max_pending
        self._deliver_within = deliver_within
        self._task: asyncio.Task | None = None
        self.cursor: str | None = None  # last relayed frame the client can replay after
        self.reattaches = 0
        # Rule 9: True only while the loop waits for the socket's next frame, nothing under way.
        self._waiting = False
        self._greeting = True  # rule 3: the socket's first frames are still coming
        self._repeat_greeting = False  # rule 3: this socket greets edges that were greeted
        self._failure: Exception | None = None  # rule 9: raised in the reader, for the loop
        self.taken_now = 0  # frames relayed by the reader itself (rule 9)

    @property
    def connected(self) -> bool:
        return self._connected

    async def start(self, stream_url: str) -> None:
        """Open the first socket (raises if the client does not take it), then pump."""
        self._ws = await self._open(stream_url)
        self._connected = True
        self._task = self._owner.spawn(self._run(), name=f"client-link-{self.live.id}")

    async def resume(self, cursor: str | None = None) -> None:
        """Reattach a session this process has no socket for: after a master restart, or taking
        it over from another replica, which relayed up to `cursor` (and whose greeting the
        edges have: the new socket's greeting then refreshes the relay's copy only)."""
        self.cursor = cursor
        self._task = self._owner.spawn(
            self._run(reattach_first=True), name=f"client-link-{self.live.id}"
        )

    async def send(self, text: str) -> bool:
        """Rule 5: True once written to the client's socket, now or after a reattach."""
        ws = self._ws
        if self._connected and ws is not None:
            try:
                await ws.send(text)
                return True
            except ConnectionClosed:
                pass  # the pump notices and reattaches; keep the frame for after
        if self._closing or len(self._pending) >= self._max_pending:
            return False
        entry = _Pending(text, asyncio.get_running_loop().create_future())
        self._pending.append(entry)
        try:
            return await asyncio.wait_for(asyncio.shield(entry.written), self._deliver_within)
        except TimeoutError:
            if entry in self._pending:  # not taken for writing: take it back, say so
                self._pending.remove(entry)
                return False
            return await entry.written  # being written right now: its outcome is the answer

    def _abandon_pending(self) -> None:
        while self._pending:
            entry = self._pending.popleft()
            if not entry.written.done():
                entry.written.set_result(False)

    async def close(self) -> None:
        self._closing = True
        self._connected = False
        self._abandon_pending()
        task, self._task = self._task, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()
            # Rule 8: `wait` returns when the loop has ended without raising its outcome (the
            # owner logged any failure); a cancellation of this caller still passes through.
            await asyncio.wait({task})
        if self._ws is not None:
            try:
                await asyncio.wait_for(self._ws.close(), CLOSE_SECONDS)
            except (OSError, TimeoutError) as exc:  # the socket is gone either way
                log.info("session %s: closing the client socket: %r", self.live.id, exc)

    # --- the loop ------------------------------------------------------------------------------

    async def _run(self, reattach_first: bool = False) -> None:
        live = self.live
        bind_session(live.id)  # the link's log lines name its session (runtime.logs rule 1)
        # A fresh master process has no greeting cached: that one goes to the edges; a replica
        # taking over with a known cursor serves edges that were greeted already.
        repeat = reattach_first and self.cursor is not None
        try:
            if reattach_first and not await self._come_back():
                return
            while not self._closing:
                await self._pump(repeat_greeting=repeat)
                if self._closing:
                    return
                self._connected = False
                if not await self._may_hold():
                    # Another replica holds the session now (its reattach took the client's
                    # socket from us): reattaching would take it back, and back again.
                    log.info("session %s: held by another replica now; letting go", live.id)
                    await self._let_go()
                    return
                log.info("session %s: the link to the client dropped; reattaching", live.id)
                if not await self._on_state(live, SessionEvent.DETACH, "client link dropped"):
                    return  # rule 7: TERMINATED meanwhile; the session layer let it go
                if not await self._come_back():
                    return
                repeat = True
        except SessionGone as gone:
            self._connected = False
            if not self._closing:
                await self._on_state(live, SessionEvent.TERMINATE, str(gone))
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("session %s: the client link failed", live.id)
            self._connected = False
            if not self._closing:
                await self._on_state(live, SessionEvent.TERMINATE, "client link failed")

    async def _come_back(self) -> bool:
        """Reattach (rule 2); False when the session turned out TERMINATED (rule 7)."""
        self._ws = await self._reattach()
        self.reattaches += 1
        # Rule 7 before anything is sent: a session another replica ended gets no frame more.
        if not await self._on_state(self.live, SessionEvent.ATTACH, "reattached"):
            return False
        while self._pending:  # rule 5: what the edges sent meanwhile goes first
            entry = self._pending.popleft()
            try:
                await self._ws.send(entry.text)
            except BaseException:
                if not entry.written.done():
                    entry.written.set_result(False)
                raise
            if not entry.written.done():
                entry.written.set_result(True)
        self._connected = True
        return True

    async def _pump(self, *, repeat_greeting: bool) -> None:
        ws = self._ws
        assert ws is not None
        self._greeting, self._repeat_greeting = True, repeat_greeting
        reader = ws if isinstance(ws, LinkConnection) else None
        if reader is not None:
            reader.take_now = self._take_now  # rule 9
        try:
            while True:
                self._waiting = True
                try:
                    message = await ws.recv()
                finally:
                    self._waiting = False
                if self._failure is not None:
                    break  # rule 9: nothing more is relayed after a failure
                text = message if isinstance(message, str) else message.decode()
                self._relayed(
                    await self._plane.from_client(
                        self.live, text, repeat_greeting=self._repeat_greeting and self._greeting
                    )
                )
        except ConnectionClosed:
            pass
        finally:
            if reader is not None:
                reader.take_now = None
        failure, self._failure = self._failure, None
        if failure is not None:
            raise failure  # rule 9: the reader's failure is the loop's

    def _take_now(self, data: str | bytes) -> bool:
        """Rule 9, called by the socket's reader: True once the frame is relayed."""
        if not self._waiting or self._failure is not None:
            return False
        text = data if isinstance(data, str) else data.decode()
        try:
            seen = self._plane.from_client_now(
                self.live, text, repeat_greeting=self._repeat_greeting and self._greeting
            )
        except Exception as exc:
            self._failure = exc
            if self._ws is not None:
                self._ws.transport.abort()  # the loop sees the socket end, then raises it
            return True
        if seen is LATER:
            return False
        self.taken_now += 1
        self._relayed(seen)
        return True

    def _relayed(self, seen: tuple[str, str] | None) -> None:
        """Rule 3: what a relayed frame does to the cursor."""
        if seen is None:
            return
        kind, message_id = seen
        if self._greeting and kind in GREETING:
            if self.cursor is None:  # rule 3: the place to replay from, if we drop
                self.cursor = message_id
            return
        if self._greeting and kind == "session.history":
            self._greeting = False
            return
        self._greeting = False
        self.cursor = message_id

    async def _reattach(self) -> ClientConnection:
        """Rule 2 with rule 4's limits."""
        window = self.live.limits.reattach_window
        if window == 0:
            raise SessionGone("the link dropped and the session's reattach_window is 0")
        deadline = self._clock.monotonic() + window
        retrying = AsyncRetrying(
            stop=lambda _state: self._closing or self._clock.monotonic() >= deadline,
            # Jittered, so sessions cut off together do not knock on the client in step.
            wait=wait_exponential_jitter(multiplier=0.1, max=self._max_backoff, jitter=0.1),
            retry=retry_if_exception_type(LinkDown),
            sleep=self._sleep,
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    return await self._reattach_once()
        except LinkDown:
            raise SessionGone(
                f"the client was not reachable within the reattach window ({window} s)"
            ) from None
        raise SessionGone("the link was closed")  # pragma: no cover - the loop always returns

    async def _reattach_once(self) -> ClientConnection:
        live = self.live
        try:
            started = await self._starter.reattach(
                node_id=live.node_id, session_id=live.id, last_message_id=self.cursor
            )
        except NotFound as exc:
            raise SessionGone(exc.message) from None
        except RawpError as exc:
            if exc.extra.get("client_status") == 404:
                raise SessionGone("the client no longer has the session") from None
            raise LinkDown(exc.message) from None
        try:
            return await self._open(started.stream_url)
        except (OSError, TimeoutError, InvalidHandshake, InvalidURI) as exc:
            raise LinkDown(str(exc)) from None

    async def _open(self, url: str) -> ClientConnection:
        ws = await connect_pinned(
            url,
            self._starter.addresses,
            subprotocols=list(SUBPROTOCOLS),
            max_size=self.live.limits.max_frame_size,
            open_timeout=10,
            # Frames are small and already counted against max_frame_size uncompressed;
            # permessage-deflate would cost both ends CPU on every frame for little gain.
            compression=None,
            # One task pings every link (master.edge.links.link_pings), not a task per socket.
            ping_interval=None if self._pings is not None else 20,
            ping_timeout=20,
            create_connection=LinkConnection,  # whole data frames parsed in one pass
        )
        if self._pings is not None:
            self._pings.add(ws)
        return ws
