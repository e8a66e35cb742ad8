"""Queued frames written in one go (issue 20): the client's `QuartSocket` under hypercorn and
the master's `BatchWriter` under uvicorn reach into their server's internals to frame several
texts and write them together. Both fall back to one ASGI send per frame when they do not find
what they expect — silently, so a server upgrade could cost the relay its speed unnoticed.
These run the real servers (as `client.server` and `master.server` configure them) on loopback:
the fast path must be found, and every text must still arrive as its own WebSocket frame, in
order, compressed or not."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given
from hypothesis import strategies as st
from quart import Quart, websocket
from websockets.asyncio.client import connect
from websockets.frames import Frame, Opcode
from wsproto.connection import Connection, ConnectionType
from wsproto.events import TextMessage

from client.api.socket import QuartSocket, _frames_as_wsproto_would
from client.server import serve_client
from master.edge.api.wire_batch import BatchWriter
from master.server import serve_asgi
from runtime.ws_frames import text_frame_header
from tests.support import free_port

TEXTS = [f'{{"n": {n}, "text": "{"x" * (n % 50)}"}}' for n in range(297)] + [
    "é" * 63,  # 126 UTF-8 bytes: the first 16-bit length
    "y" * 65_535,  # the last 16-bit length
    "z" * 65_536,  # the first 64-bit length
]


def app_with(make_writer) -> tuple[Quart, list[bool]]:
    app = Quart(__name__)
    found: list[bool] = []

    @app.websocket("/ws")
    async def ws():
        writer = make_writer()
        found.append(writer.fast)
        await websocket.accept()
        for start in range(0, len(TEXTS), 100):  # three batches, as a flood would queue them
            await writer.send_many(TEXTS[start : start + 100])
        await websocket.receive()  # until the peer is done reading

    return app, found


OWN_FRAMING: list[bool] = []  # per client batch: framed by the client itself (runtime.ws_frames)


class ClientWriter:
    def __init__(self) -> None:
        self.socket = QuartSocket(websocket)
        self.fast = self.socket.stream is not None

    async def send_many(self, texts):
        OWN_FRAMING.append(_frames_as_wsproto_would(self.socket.stream.connection))
        await self.socket.send_many(texts)


class MasterWriter:
    def __init__(self) -> None:
        self.writer = BatchWriter(websocket._get_current_object())
        self.fast = self.writer.protocol is not None

    async def send_many(self, texts):
        await self.writer.send_many(texts)


async def read_all(port: int, compression: str | None) -> list[str]:
    async with connect(f"ws://127.0.0.1:{port}/ws", compression=compression) as ws:
        received = [await asyncio.wait_for(ws.recv(), 10) for _ in TEXTS]
        await ws.send("done")
    return received


@pytest.mark.parametrize("compression", [None, "deflate"])
@pytest.mark.parametrize(
    "serve, make_writer",
    [(serve_client, ClientWriter), (serve_asgi, MasterWriter)],
    ids=["client-hypercorn", "master-uvicorn"],
)
async def test_queued_frames_take_the_fast_path_and_arrive_one_by_one(
    serve, make_writer, compression
):
    app, found = app_with(make_writer)
    port, stop = free_port(), asyncio.Event()
    server = asyncio.create_task(serve(app, "127.0.0.1", port, stop))
    try:
        for _ in range(200):  # until it listens (the test's timeout bounds this)
            try:
                received = await read_all(port, compression)
                break
            except OSError:
                await asyncio.sleep(0.02)
        else:
            raise AssertionError("the server did not listen")
    finally:
        stop.set()
        await asyncio.wait_for(server, 10)
    assert found == [True], "the batch writer did not find its server's internals"
    assert received == TEXTS
    if make_writer is ClientWriter:  # without deflate the client frames the texts itself
        assert set(OWN_FRAMING) == {compression is None}
        OWN_FRAMING.clear()


@given(st.text(max_size=300) | st.integers(0, 70_000).map(lambda n: "q" * n))
def test_the_master_frames_a_text_as_websockets_does(text):
    data = text.encode()
    assert text_frame_header(len(data)) + data == Frame(Opcode.TEXT, data).serialize(mask=False)


@given(st.text(max_size=300) | st.integers(0, 70_000).map(lambda n: "q" * n))
def test_the_client_frames_a_text_as_wsproto_does(text):
    connection = Connection(ConnectionType.SERVER)
    assert _frames_as_wsproto_would(connection)
    data = text.encode()
    assert text_frame_header(len(data)) + data == connection.send(TextMessage(data=text))
