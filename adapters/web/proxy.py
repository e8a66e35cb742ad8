"""`GET /api/sessions/{id}/stream`: the browser's WebSocket, relayed to the master's Edge API
session socket (RAWP §9.4; docs/edge-api.md, docs/web.md).

Rules:

1. The gateway takes a fresh single-use ticket for the cookie's subject (A-22) and opens
   `/v1/edge/ws/stream` itself, passing on the browser's `?last_message_id=` so the master
   replays what the browser missed. The browser never sees the ticket or a token.
2. The upstream socket is opened before the browser's is accepted: a session that is not the
   user's, or a master that refuses, is an HTTP error in JSON, not a socket that opens and dies.
3. Text frames go through verbatim, both ways: the master validates what the browser sends
   and answers a bad frame with `session.error`, as for any edge. The relay never parses them,
   so no frame can end it. Binary frames are not part of the protocol and are dropped.
4. The two directions are one `race` (runtime.tasks): when the browser leaves, the upstream socket
   is closed; when the master's socket drops, the browser's is closed with 1012 ("restart"), and
   the front end reconnects with its last message id — unless the master closed it with 1000,
   "session terminated" (the session was ended, here or on another edge): that close is passed
   on as it is, so the page shows the session ended (and offers Resume) instead of
   reconnecting to a session that is gone. Sends await the peer's drain, so a slow
   side slows the other down instead of queueing without bound.
5. Open browser sockets are kept in `open_sockets` while they relay, so a gateway that stops
   closes them with 1012 too (the app reconnects to it, or to another replica) instead of
   waiting for the browsers to leave.
6. Approvals answered in the browser are audited as the chat edges audit theirs
   (adapters.web.approvals): it sees each frame, after the browser's is forwarded.
7. The reader's prompts are kept for a reloaded page (gateway.storage.web_prompts): `remember` sees
   each browser frame *before* it is forwarded, so a prompt is on record before any edge can
   see the turn it starts. Keeping it is best effort: a failure is logged and the prompt goes
   on all the same.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import aiohttp
from aiohttp import web

from adapters.web.approvals import WebApprovals
from gateway.edge_client import EdgeApiError, EdgeClient
from rawp.frames import SUBPROTOCOLS
from runtime.tasks import race

log = logging.getLogger(__name__)

MAX_FRAME_BYTES = 16 * 1024 * 1024
MASTER_GONE = 1012  # rule 4: "service restart", the browser reconnects
SESSION_ENDED = 1000  # rule 4: the master ended the session; passed on, the browser stays
HEARTBEAT_S = 30.0


Remember = Callable[[str], Awaitable[None]]  # rule 7: a browser frame's text, kept if a prompt


async def _remember(remember: Remember, text: str, session_id: str) -> None:
    try:
        await remember(text)
    except Exception as exc:  # rule 7: the prompt matters more than its copy
        # The type only: a database error's message may quote the prompt, which may hold secrets.
        log.warning("web session %s: could not keep a prompt: %s", session_id, type(exc).__name__)


class UpstreamRefused(Exception):
    def __init__(self, status: int, error_code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.error_code = error_code
        self.message = message


async def open_upstream(
    edge: EdgeClient, subject: str, session_id: str, last_message_id: str | None
) -> aiohttp.ClientWebSocketResponse:
    """Rules 1 and 2: the master's socket for this session, as `subject`."""
    try:
        ticket = await edge.new_ticket(subject, session_id)
    except EdgeApiError as exc:
        raise UpstreamRefused(exc.status or 502, exc.error_code, exc.message) from None
    url = edge.stream_url(session_id, ticket, last_message_id)
    try:
        return await edge.http.ws_connect(
            url, protocols=SUBPROTOCOLS, max_msg_size=MAX_FRAME_BYTES, heartbeat=HEARTBEAT_S
        )
    except aiohttp.WSServerHandshakeError as exc:  # never the URL: it carries the ticket
        raise UpstreamRefused(
            502, "SESSION_STREAM_REFUSED", f"the master refused the session stream ({exc.status})"
        ) from None
    except (aiohttp.ClientError, OSError, TimeoutError):
        raise UpstreamRefused(
            502, "MASTER_UNREACHABLE", "the master did not answer the session stream"
        ) from None


async def relay(
    request: web.Request,
    upstream: aiohttp.ClientWebSocketResponse,
    session_id: str,
    open_sockets: set[web.WebSocketResponse],
    approvals: WebApprovals | None = None,
    remember: Remember | None = None,
) -> web.WebSocketResponse:
    browser = web.WebSocketResponse(
        protocols=SUBPROTOCOLS, max_msg_size=MAX_FRAME_BYTES, heartbeat=HEARTBEAT_S
    )
    try:
        await browser.prepare(request)
    except BaseException:
        await upstream.close()
        raise
    master_dropped = False
    open_sockets.add(browser)  # rule 5

    async def to_master() -> None:
        async for message in browser:
            if message.type == aiohttp.WSMsgType.TEXT:
                if remember is not None:
                    await _remember(remember, message.data, session_id)  # rule 7
                await upstream.send_str(message.data)  # rule 3: verbatim
                if approvals is not None:
                    await approvals.from_browser(message.data)  # rule 6, after the answer

    async def to_browser() -> None:
        nonlocal master_dropped
        async for message in upstream:
            if message.type == aiohttp.WSMsgType.TEXT:
                if approvals is not None:
                    approvals.from_master(message.data)  # rule 6
                await browser.send_str(message.data)
        master_dropped = True

    try:
        await race(to_master(), to_browser())
    except (aiohttp.ClientError, ConnectionError, RuntimeError) as exc:
        # One side broke mid-send; the other is closed below like any other end (rule 4).
        log.info("web session %s: relay ended: %s", session_id, type(exc).__name__)
        master_dropped = master_dropped or upstream.closed
    except Exception:  # the socket is already upgraded: logged here, both sides closed below
        log.exception("web session %s: the relay failed", session_id)
    finally:
        open_sockets.discard(browser)
        await upstream.close()
        if not browser.closed:
            if master_dropped and upstream.close_code == SESSION_ENDED:
                await browser.close(code=SESSION_ENDED, message=b"session terminated")
            elif master_dropped:
                await browser.close(code=MASTER_GONE, message=b"master link dropped")
            else:
                await browser.close()
    return browser
