"""The master's WebSocket protocol under uvicorn (master.edge.api.ws_protocol): reading is
paused only once `PAUSE_AT` messages wait for the app, and resumed once the app has taken them;
every message still arrives, in order. A real uvicorn server on loopback, a real `websockets`
client; the app holds its reads back until the test lets it go."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import uvicorn
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.asyncio.client import connect

from master.edge.api.ws_protocol import PAUSE_AT, EdgeWebSocketProtocol
from tests.gateway.support import eventually
from tests.support import free_port


class HeldApp:
    """Accepts one WebSocket, then reads nothing until `go` is set; keeps what it read."""

    def __init__(self) -> None:
        self.go = asyncio.Event()
        self.protocol: WebSocketsSansIOProtocol | None = None
        self.messages: list[str] = []

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "websocket":
            return
        self.protocol = receive.__self__  # uvicorn's protocol instance for this socket
        assert (await receive())["type"] == "websocket.connect"
        await send({"type": "websocket.accept"})
        await self.go.wait()
        while True:
            event = await receive()
            if event["type"] != "websocket.receive":
                return
            self.messages.append(event["text"])


@contextlib.asynccontextmanager
async def _serving(app: HeldApp, protocol: type) -> AsyncIterator[int]:
    """uvicorn with `protocol` on a free port, its task owned by a group: a failure of the
    server surfaces here, and the server is stopped whatever the test found."""
    port = free_port()
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        ws=protocol,
        lifespan="off",
        log_config=None,
        timeout_graceful_shutdown=2,
    )
    server = uvicorn.Server(config)
    async with asyncio.TaskGroup() as group:
        group.create_task(server.serve())
        try:
            await eventually(lambda: server.started, "uvicorn to start")
            yield port
        finally:
            app.go.set()  # a failed check must not leave the app waiting
            server.should_exit = True


async def _waiting_while_held(protocol: type, count: int) -> tuple[HeldApp, list[bool]]:
    """Send `count` messages one by one to an app that reads none; after each, whether the
    server still reads the socket."""
    app = HeldApp()
    reading = []
    async with _serving(app, protocol) as port, connect(f"ws://127.0.0.1:{port}") as ws:
        await eventually(lambda: app.protocol is not None, "the socket")
        for number in range(count):
            await ws.send(f"m{number}")
            # Queued, or left in the socket's buffer because reading is paused.
            await eventually(
                lambda n=number: (
                    app.protocol.queue.qsize() == n + 1 or not app.protocol.transport.is_reading()
                ),
                "the message queued, or reading paused",
            )
            reading.append(app.protocol.transport.is_reading())
        app.go.set()
        await eventually(lambda: len(app.messages) == count, "every message")
        await eventually(app.protocol.transport.is_reading, "reading resumed")
    return app, reading


async def test_reading_is_paused_only_when_messages_pile_up():
    app, reading = await _waiting_while_held(EdgeWebSocketProtocol, PAUSE_AT + 2)
    assert reading == [True] * (PAUSE_AT - 1) + [False] * 3  # paused once PAUSE_AT wait
    assert app.messages == [f"m{n}" for n in range(PAUSE_AT + 2)]  # all, in order, resumed


async def test_uvicorns_own_protocol_pauses_after_every_message():
    """What the change is against: without it, one waiting message pauses the socket."""
    _, reading = await _waiting_while_held(WebSocketsSansIOProtocol, 2)
    assert reading == [False, False]
