"""Prompt attachments (`control.prompt.request.attachments`, dps-profile §6): the one place
their limits are stated, and what counts as an image.

Rules:

1. `AttachmentLimits` is used by both ends: the gateway refuses a too-large attachment before
   it sends anything (the user is told which file and why), and the client checks the frame
   again, because a frame may come from any edge (docs/protocol.md, Decisions).
2. The defaults keep the whole prompt frame, base64 included, inside the default 1 MiB
   `max_frame_size` with room left for the envelope and the text.
3. An image is recognised by its bytes, not by the MIME type it was sent with: a model API
   refuses an image whose declared type does not match its content, and a chat platform's
   type is a guess from the file name. Only PNG, JPEG, GIF and WebP count, the formats every
   image-taking agent of this project accepts; anything else is a file.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass

# The `agent.error` code (severity "warning") of an attachment an agent kind cannot take.
NOT_DELIVERED = "ATTACHMENT_NOT_DELIVERED"
TOO_LARGE = "ATTACHMENT_TOO_LARGE"
INVALID = "INVALID_ATTACHMENT"

IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


def encoded_size(size: int) -> int:
    """The length of `size` bytes in base64 (with padding)."""
    return 4 * ((size + 2) // 3)


@dataclass(frozen=True, slots=True)
class AttachmentLimits:
    """Rule 2: how many attachments one prompt may carry and how large they may be."""

    max_count: int = 10
    max_bytes_each: int = 512 * 1024
    max_encoded_total: int = 1024 * 1024 - 64 * 1024

    def too_large(self, name: str, size: int) -> str | None:
        """Why one attachment of `size` bytes cannot be sent, or None (checked before a
        download where the platform tells the size first)."""
        if size > self.max_bytes_each:
            return (
                f"{name} is {size:,} bytes; an attachment may be at most "
                f"{self.max_bytes_each:,} bytes"
            )
        return None

    def refusal(self, attachments: Sequence[tuple[str, int]]) -> str | None:
        """Why these `(name, size in bytes)` attachments cannot go in one prompt, or None."""
        if len(attachments) > self.max_count:
            return f"at most {self.max_count} attachments fit in one prompt"
        total = 0
        for name, size in attachments:
            if problem := self.too_large(name, size):
                return problem
            total += encoded_size(size)
            if total > self.max_encoded_total:
                return (
                    f"{name} does not fit: the attachments of one prompt may be at most "
                    f"{self.max_encoded_total * 3 // 4:,} bytes together"
                )
        return None


DEFAULT_LIMITS = AttachmentLimits()


def image_type(data: bytes) -> str | None:
    """Rule 3: the MIME type of an image `data` really is, or None when it is not one."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def decode(data: str) -> bytes | None:
    """The bytes of a base64 `data` field, or None when it is not strict base64."""
    try:
        return base64.b64decode(data, validate=True)
    except ValueError:
        return None
