"""Several frames to an edge in one socket write, under uvicorn (issue 20).

Through Quart and uvicorn every `websocket.send` is a yield to the event loop (Quart's own
`sleep(0)`), an ASGI message and a socket write; for a flood of small frames the writes cost
more than the relay. `send_many` has the connection's `websockets` protocol frame each text —
each one its own text frame, compressed if the edge negotiated permessage-deflate, exactly as
uvicorn's `send` does — and writes their bytes at once, after the same wait for the socket to
be writable and with the same disconnection error (`ClientDisconnected`, an `OSError`).

When the edge negotiated no extension (no permessage-deflate), a text frame from a server is
only a header and the UTF-8 bytes (RFC 6455 §5.2: FIN, opcode 1, unmasked), so `send_many` writes
them itself: websockets' `send_text` → `send_frame` → `Frame.serialize` cost the master more than
the relaying around it. It does so only when websockets would frame the same bytes: the
connection OPEN and no fragmented message in progress. Anything websockets had queued already
(a Pong, say) is written first.

That reaches into uvicorn's `websockets-sansio` protocol (the owner of the ASGI `send` Quart
was given; master.server picks it) and is used only when it is found and the socket is open;
otherwise the frames go one by one through ASGI, with uvicorn's own checks and errors.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from runtime.ws_frames import text_frame_header

try:  # uvicorn's internals, as of uvicorn 0.3x–0.5x; absent, frames go one by one
    from uvicorn.protocols.utils import ClientDisconnected
    from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
    from websockets.exceptions import InvalidState
    from websockets.protocol import State
except ImportError:  # pragma: no cover - another server or version
    WebSocketsSansIOProtocol = None


class BatchWriter:
    """`send_many` over one Quart websocket (the object, not the context-local proxy)."""

    def __init__(self, websocket: Any) -> None:
        self.websocket = websocket
        # Quart's send is `partial(ASGIWebsocketConnection.send_data, asgi_send)`.
        self.asgi_send = getattr(websocket._send, "args", (None,))[0]
        owner = getattr(self.asgi_send, "__self__", None)
        known = WebSocketsSansIOProtocol is not None and isinstance(owner, WebSocketsSansIOProtocol)
        self.protocol = owner if known else None

    def write_now(self, text: str) -> bool:
        """Frame and write one text at once when nothing has to be waited for; False (nothing
        written) otherwise. An edge socket writes an idle edge's frame this way, without
        waking its sender task: at one frame a second per session, that wake-up was a
        large share of the master's work on a frame (issue 35)."""
        protocol = self.protocol
        if protocol is None or not _writes_now(protocol):
            return False
        _write(protocol, (text,))
        return True

    async def send_many(self, texts: Sequence[str]) -> None:
        """Send each text as its own text frame, in order, written to the socket together."""
        protocol = self.protocol
        if protocol is not None:
            await protocol.writable.wait()  # uvicorn's flow control, as its `send` waits
        if protocol is None or not _open(protocol):
            for text in texts:
                if self.asgi_send is None:
                    await self.websocket.send(text)
                else:
                    await self.asgi_send({"type": "websocket.send", "bytes": None, "text": text})
            return
        _write(protocol, texts)


def _write(protocol: Any, texts: Sequence[str]) -> None:
    """Frame `texts` on an open connection and write them to its transport in one write."""
    conn = protocol.conn
    if not conn.extensions and conn.state is State.OPEN and not conn.expect_continuation_frame:
        output = conn.data_to_send()  # what websockets queued before these, first
        for text in texts:
            data = text.encode()
            output.append(text_frame_header(len(data)))
            output.append(data)
        protocol.transport.write(b"".join(output))
        return
    try:
        for text in texts:
            conn.send_text(text.encode())
    except InvalidState:
        raise ClientDisconnected() from None
    finally:  # what was framed before a failure is written, as frame-by-frame sends would
        output = conn.data_to_send()
        if output:
            protocol.transport.write(b"".join(output))


def _writes_now(protocol: Any) -> bool:
    """Whether frames can be framed and written at once, with nothing to wait for: the socket
    open (uvicorn's condition and websockets' own) and uvicorn's flow control not holding."""
    return (
        protocol.writable.is_set()
        and _open(protocol)
        and protocol.conn.state is State.OPEN
        and not protocol.conn.expect_continuation_frame
    )


def _open(protocol: Any) -> bool:
    """uvicorn's own condition for a `websocket.send` to be framed and written."""
    return (
        not protocol.disconnected
        and protocol.handshake_complete
        and not protocol.close_sent
        and protocol.initial_response is None
    )
