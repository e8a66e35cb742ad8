"""The master's client-link reader (master.edge.links.link_reader) against websockets' own reader.

A raw TCP server on loopback answers the WebSocket handshake, then writes a script of frame
bytes cut into chunks at arbitrary places (the 101 response's head shares a chunk with the
first frames, and headers and payloads are split). The same bytes go once to a
`LinkConnection` and once to websockets' plain `ClientConnection`. Both must deliver the same
messages, and end with the same close code. The reader's fast path must also be taken.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import itertools
import struct

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed
from websockets.frames import Frame, Opcode

from master.edge.links.link_reader import LinkConnection, Mode

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def frame(opcode: Opcode, data: bytes, *, fin: bool = True) -> bytes:
    return Frame(opcode, data, fin=fin).serialize(mask=False)


def masked(data: bytes) -> bytes:  # a server must not mask (RFC 6455 §5.1)
    return Frame(Opcode.TEXT, data).serialize(mask=True)


def cut(stream: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(stream) + 1) for c in cuts} | {0, len(stream)})
    return [stream[a:b] for a, b in itertools.pairwise(points) if b > a]


async def serve_script(chunks_after_head: list[bytes], head_shares_first: bool):
    """A server that answers the handshake and then writes the chunks, one write each."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = await reader.readuntil(b"\r\n\r\n")
        key = next(
            line.split(b":", 1)[1].strip()
            for line in request.split(b"\r\n")
            if line.lower().startswith(b"sec-websocket-key:")
        )
        accept = base64.b64encode(hashlib.sha1(key + GUID).digest())
        head = (
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            b"Sec-WebSocket-Accept: " + accept + b"\r\n\r\n"
        )
        chunks = list(chunks_after_head)
        if head_shares_first and chunks:
            chunks[0] = head + chunks[0]
        else:
            chunks.insert(0, head)
        for chunk in chunks:
            writer.write(chunk)
            await writer.drain()
            await asyncio.sleep(0.001)  # most chunks then arrive as reads of their own
        try:  # the client's frames (masked) until its Close, which is answered; then hang up
            while True:
                first, second = await reader.readexactly(2)
                size = second & 0x7F
                if size == 126:
                    (size,) = struct.unpack("!H", await reader.readexactly(2))
                elif size == 127:
                    (size,) = struct.unpack("!Q", await reader.readexactly(8))
                await reader.readexactly(4 + size)  # the mask and the payload
                if first & 0x0F == Opcode.CLOSE.value:
                    writer.write(CLOSE)  # answered (or a second one, which the client ignores)
                    await writer.drain()
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()

    return await asyncio.start_server(handle, "127.0.0.1", 0)


async def read_through(kind: type[ClientConnection], chunks, head_shares_first: bool):
    server = await serve_script(chunks, head_shares_first)
    port = server.sockets[0].getsockname()[1]
    messages: list = []
    try:
        ws = await connect(
            f"ws://127.0.0.1:{port}",
            create_connection=kind,
            max_size=100_000,
            ping_interval=None,
            close_timeout=1,
        )
        try:
            async with asyncio.timeout(20):
                async for message in ws:
                    messages.append(message)
        except ConnectionClosed:
            pass
        await asyncio.wait_for(ws.wait_closed(), 10)
        code = ws.protocol.close_rcvd.code if ws.protocol.close_rcvd else None
        sent = ws.protocol.close_sent.code if ws.protocol.close_sent else None
        return messages, code, sent, ws
    finally:
        server.close()
        await server.wait_closed()


async def compare(stream: bytes, cuts: list[int], head_shares_first: bool):
    chunks = cut(stream, cuts)
    fast = await read_through(LinkConnection, chunks, head_shares_first)
    plain = await read_through(ClientConnection, chunks, head_shares_first)
    assert fast[:3] == plain[:3]
    return fast


TEXTS = ["x", "é" * 63, "y" * 300, "z" * 70_000, ""]
CLOSE = frame(Opcode.CLOSE, struct.pack("!H", 1000) + b"bye")


async def test_whole_text_frames_take_the_fast_path_in_any_chunking():
    stream = b"".join(frame(Opcode.TEXT, t.encode()) for t in TEXTS)
    stream += frame(Opcode.BINARY, b"\x00\x01") + frame(Opcode.PING, b"p") + CLOSE
    fine = list(range(0, 400, 3)) + list(range(400, len(stream), 997))  # headers split too
    for cuts in ([], [1], [2, 3, 4, 5], fine, [130, 70_100]):
        messages, code, sent, ws = await compare(stream, cuts, head_shares_first=True)
        assert messages == [*TEXTS, b"\x00\x01"] and code == 1000 and sent == 1000
    assert ws.mode is Mode.WEBSOCKETS  # the Close handed the stream over (rule 6)


async def test_the_fast_path_is_what_reads_them():
    stream = b"".join(frame(Opcode.TEXT, t.encode()) for t in TEXTS)
    server = await serve_script([stream], head_shares_first=False)
    port = server.sockets[0].getsockname()[1]
    try:
        async with connect(
            f"ws://127.0.0.1:{port}", create_connection=LinkConnection, max_size=100_000
        ) as ws:
            received = [await asyncio.wait_for(ws.recv(), 5) for _ in TEXTS]
            assert received == TEXTS
            assert ws.mode is Mode.FAST
    finally:
        server.close()
        await server.wait_closed()


async def test_unusual_frames_fail_the_link_as_websockets_would():
    first = frame(Opcode.TEXT, b"before")
    for unusual in (
        masked(b"masked"),  # a masked server frame: 1002
        b"\xc1\x01r",  # FIN, RSV1 and text, without an extension: 1002
        frame(Opcode.TEXT, b"x" * 100_001),  # over max_size: 1009
        frame(Opcode.CONT, b"c"),  # a continuation with no message: 1002
        b"\x83\x00",  # a reserved opcode: 1002
    ):
        messages, _, sent, ws = await compare(
            first + unusual + frame(Opcode.TEXT, b"after"), [], True
        )
        assert messages == ["before"] and sent in (1002, 1009)
        assert ws.mode is Mode.WEBSOCKETS


async def test_a_fragmented_message_is_assembled_by_websockets():
    stream = (
        frame(Opcode.TEXT, b"one")
        + frame(Opcode.TEXT, b"tw", fin=False)
        + frame(Opcode.PING, b"mid")  # a control frame between fragments is allowed
        + frame(Opcode.CONT, b"o")
        + frame(Opcode.TEXT, b"three")
        + CLOSE
    )
    messages, code, _, _ = await compare(stream, [5, 9, 20], head_shares_first=True)
    assert messages == ["one", "two", "three"] and code == 1000


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    texts=st.lists(st.text(max_size=400), min_size=1, max_size=12),
    pings=st.lists(st.integers(0, 12), max_size=3),
    cuts=st.lists(st.integers(0, 10_000), max_size=8),
    head_shares_first=st.booleans(),
)
def test_any_frames_in_any_chunks_read_as_websockets_reads_them(
    texts, pings, cuts, head_shares_first
):
    parts = [frame(Opcode.TEXT, t.encode()) for t in texts]
    for at in sorted(pings, reverse=True):
        parts.insert(min(at, len(parts)), frame(Opcode.PING, b"k"))
    stream = b"".join(parts) + CLOSE
    messages, code, _, _ = asyncio.run(compare(stream, cuts, head_shares_first))
    assert messages == texts and code == 1000
