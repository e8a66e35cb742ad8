"""`/v1/edge/ws/stream` (RAWP §9.4, EP-E6): the edge's end of the data plane.

The upgrade follows the client's rules (§5.3): a subprotocol we speak must be offered, or
`426`; the single-use `ticket` must fit the `session_id`, or `401` — both with the §7.1 JSON
body and before the socket is accepted. Once accepted, the socket is registered with the
relay (session and node), greeted with what it cannot have seen plus, when it asks with
`last_message_id`, the frames it missed (relay rule 4); then frames flow both ways until
either side leaves.
"""

from __future__ import annotations

import logging

import orjson
from quart import Blueprint, Response, websocket

from master.api.common import services
from master.edge.api.wire_batch import BatchWriter
from master.edge.relay.edge_socket import EdgeSocket
from rawp.errors import RawpError, UpgradeRequired
from rawp.frames import SUBPROTOCOLS
from runtime.logs import bind_session

log = logging.getLogger("rawp.master.edge.ws")

blueprint = Blueprint("edge_ws", __name__)


def _refusal(error: RawpError) -> Response:
    response = Response(
        orjson.dumps(error.to_body()), status=error.status, mimetype="application/json"
    )
    response.headers.update(error.headers)
    return response


@blueprint.websocket("/v1/edge/ws/stream")
async def edge_stream():
    s = services()
    offered = list(websocket.requested_subprotocols)
    subprotocol = next((p for p in SUBPROTOCOLS if p in offered), None)
    if subprotocol is None:
        return _refusal(UpgradeRequired(f"offer one of the subprotocols {', '.join(SUBPROTOCOLS)}"))
    try:
        live = await s.edge.sessions.admit(
            websocket.args.get("ticket"), websocket.args.get("session_id")
        )
    except RawpError as error:
        return _refusal(error)
    await websocket.accept(subprotocol=subprotocol)
    bind_session(live.id)  # this socket's log lines name its session (runtime.logs rule 1)
    wire = _QuartWire()
    edge = EdgeSocket(
        wire,
        user_id=live.user_id,
        session_id=live.id,
        node_id=live.node_id,
        max_backlog=s.settings.edge.queue_bytes,
        metrics=s.metrics,
    )
    relay = s.edge.relay
    # Greeting, and with `last_message_id` the frames it missed (docs/edge-api.md), then live.
    plane = s.edge.plane
    metrics = s.metrics
    cursor = websocket.args.get("last_message_id")
    metrics.edge_sockets += 1
    try:
        await relay.attach(edge, cursor)
        metrics.edge_connections.labels("true" if cursor else "false").inc()
        if edge.replayed is not None:
            metrics.replay_frames.observe(edge.replayed)
        await edge.serve(lambda data: plane.from_edge(live, edge, data))
    finally:
        metrics.edge_sockets -= 1
        relay.detach(edge)


class _QuartWire:
    """Quart's websocket as an `edge_socket.Wire`, with `send_many` (master.edge.api.wire_batch)."""

    def __init__(self) -> None:
        self._batch = BatchWriter(websocket._get_current_object())

    async def send(self, data: str) -> None:
        await websocket.send(data)

    async def send_many(self, texts: list[str]) -> None:
        await self._batch.send_many(texts)

    def write_now(self, text: str) -> bool:
        return self._batch.write_now(text)

    async def receive(self) -> str | bytes:
        return await websocket.receive()

    async def close(self, code: int, reason: str = "") -> None:
        await websocket.close(code, reason)
