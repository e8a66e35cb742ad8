"""`/v1/ws/stream` (RAWP §5.3): subprotocol, ticket, then the session's data plane."""

from __future__ import annotations

from quart import Blueprint, websocket

from client.api.common import error_response, services
from client.api.socket import QuartSocket
from client.sessions.stream import StreamHandler
from rawp.errors import RawpError, UpgradeRequired
from rawp.frames import SUBPROTOCOLS
from runtime.logs import bind_session

stream = Blueprint("stream", __name__)


def choose_subprotocol(offered: list[str]) -> str | None:
    """`rawp-dps-1.0` when offered, else `rawp-1.0` (C-WS-01, R-02)."""
    return next((p for p in SUBPROTOCOLS if p in offered), None)


@stream.websocket("/v1/ws/stream")
async def ws_stream():
    svc = services()
    subprotocol = choose_subprotocol(list(websocket.requested_subprotocols))
    if subprotocol is None:  # C-WS-02 / A-16: 426 with the §7.1 body, before accepting
        return error_response(
            UpgradeRequired(f"offer one of the subprotocols {', '.join(SUBPROTOCOLS)}")
        )
    try:
        session = svc.sessions.bind(websocket.args.get("ticket"), websocket.args.get("session_id"))
    except RawpError as exc:  # C-WS-03: bad, reused or expired ticket → 401
        return error_response(exc)
    await websocket.accept(subprotocol=subprotocol)
    bind_session(session.id)  # this socket's log lines name its session (runtime.logs rule 1)
    outbox = session.attach()
    handler = StreamHandler(session, QuartSocket(websocket), guard=svc.guard, search=svc.search)
    try:
        await handler.serve(outbox)
    finally:
        # reattach_window 0: the session ends with its socket (or when it was let go).
        if session.detach(outbox) or outbox.end_session:
            svc.sessions.end(session)
