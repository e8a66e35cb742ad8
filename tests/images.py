"""Small real files for the attachment tests: a valid PNG and a PDF, built here."""

from __future__ import annotations

import base64
import struct
import zlib

PDF = b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n"


def tiny_png(width: int = 2, height: int = 2) -> bytes:
    """A valid RGB PNG of `width` × `height` red pixels (every decoder accepts it)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def attachment(name: str, data: bytes, mime_type: str = "application/octet-stream") -> dict:
    """One `control.prompt.request.attachments` entry."""
    return {"name": name, "mime_type": mime_type, "data": base64.b64encode(data).decode()}
