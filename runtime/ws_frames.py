"""A WebSocket text frame's header, written by the senders that frame their own text (issue 20,
issue 35): the master's batch writer under uvicorn (master.edge.api.wire_batch) and the client's
under hypercorn (client.api.socket). A text frame from a server with no extension negotiated is
only this header and the UTF-8 bytes (RFC 6455 §5.2); going through the servers' own framing
(websockets' `Frame.serialize`, wsproto's `send_data`) cost more per frame than the relaying
around it. Each caller checks first that its library would frame the same bytes."""

from __future__ import annotations


def text_frame_header(size: int) -> bytes:
    """RFC 6455 §5.2: FIN + text opcode, unmasked, the payload length in 7, 7+16 or 7+64 bits."""
    if size < 126:
        return bytes((0x81, size))
    if size < 1 << 16:
        return b"\x81\x7e" + size.to_bytes(2, "big")
    return b"\x81\x7f" + size.to_bytes(8, "big")
