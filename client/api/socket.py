"""The Quart WebSocket as `client.sessions.stream.Socket`, writing queued frames in one go
(issue 20).

Through Quart and hypercorn every `websocket.send` is a yield to the event loop (Quart's own
`sleep(0)`), an ASGI message, a wsproto event and a socket write: per frame, more than the
client's whole work on it. When frames queue, `send_many` has wsproto frame each of them —
each DPS event stays its own WebSocket text frame, compressed if the edge negotiated
permessage-deflate, exactly as `send` would — and hands hypercorn their bytes as one write.
Without an extension it frames them itself, header and bytes (runtime.ws_frames): the same
bytes wsproto would make, for less than its `send_data` costs (issue 35).

That reaches into hypercorn (its `WSStream`: the owner of the ASGI `send` Quart was given)
and works only when it finds one; otherwise, and whenever the stream is not open (closing,
closed: hypercorn's own errors then apply), it sends frame by frame through ASGI.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from runtime.ws_frames import text_frame_header

try:  # the server's internals, as of hypercorn 0.17–0.18; absent, frames go one by one
    from hypercorn.protocol.events import Data
    from hypercorn.protocol.ws_stream import ASGIWebsocketState, WSStream
    from wsproto.connection import ConnectionState
    from wsproto.events import TextMessage
    from wsproto.utilities import LocalProtocolError
except ImportError:  # pragma: no cover - another server or version
    WSStream = None


class QuartSocket:
    """`send`, `receive` and `send_many` over the current Quart websocket."""

    def __init__(self, websocket: Any) -> None:
        self.websocket = websocket._get_current_object()
        # Quart's send is `partial(ASGIWebsocketConnection.send_data, asgi_send)`.
        asgi_send = getattr(self.websocket._send, "args", (None,))[0]
        self.asgi_send = asgi_send
        owner = getattr(asgi_send, "__self__", None)
        self.stream = owner if WSStream is not None and isinstance(owner, WSStream) else None

    async def receive(self) -> str | bytes:
        return await self.websocket.receive()

    async def send(self, data: str) -> None:
        await self.websocket.send(data)

    async def send_many(self, texts: Sequence[str]) -> None:
        """Send each text as its own text frame, in order, written to the socket together."""
        stream = self.stream
        if stream is None or stream.state != ASGIWebsocketState.CONNECTED:
            for text in texts:
                if self.asgi_send is None:
                    await self.websocket.send(text)
                else:
                    await self.asgi_send({"type": "websocket.send", "bytes": None, "text": text})
            return
        connection = stream.connection
        if _frames_as_wsproto_would(connection):
            # No extension and no fragmented message: a text frame is the header and the bytes
            # (runtime.ws_frames), what wsproto's `send_data` makes with three copies (issue 35).
            parts: list[bytes] = []
            for text in texts:
                data = text.encode()
                parts.append(text_frame_header(len(data)))
                parts.append(data)
            await stream.send(Data(stream_id=stream.stream_id, data=b"".join(parts)))
            return
        chunks = []
        for text in texts:
            try:
                chunks.append(connection.send(TextMessage(data=text)))
            except LocalProtocolError:  # the edge closed: hypercorn drops such a send too
                break
        if chunks:
            await stream.send(Data(stream_id=stream.stream_id, data=b"".join(chunks)))


def _frames_as_wsproto_would(connection: Any) -> bool:
    """wsproto would frame a text as a bare header and its bytes: the connection open, no
    extension (permessage-deflate) negotiated, no fragmented message under way."""
    proto = getattr(connection, "_proto", None)
    return (
        connection.state is ConnectionState.OPEN
        and proto is not None
        and not proto.extensions
        and getattr(proto, "_outbound_opcode", True) is None
    )
