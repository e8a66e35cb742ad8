"""Prompt attachments on the client: checked again, images kept for the agent, files saved.

Rules:

1. A frame may come from any edge, so its attachments are checked here again against the one
   set of limits (rawp.attachments): strict base64, the count and the sizes. A prompt that
   fails is refused with `session.error` (`ATTACHMENT_TOO_LARGE`, `INVALID_ATTACHMENT`) and
   nothing runs.
2. An attachment whose bytes are an image (rawp.attachments.image_type) goes to the agent
   kind as an image (`Prompt.images`); the kind decides whether it can take it
   (client.agents.base.Agent.images_as_files).
3. Every other attachment is saved into the workspace under the agent's `attachments_dir`
   (default `.rawp/attachments`): the folder is confined to the workspace by `PathGuard`
   (RAWP §7.2; a symlink leading out is refused), the name is reduced to letters, digits,
   `.`, `_` and `-`, and a file that exists is never overwritten: the new one gets a `-1`,
   `-2`, … suffix (created with O_EXCL, so two prompts at once cannot take the same name).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from client.files.paths import PathGuard
from rawp.attachments import (
    DEFAULT_LIMITS,
    INVALID,
    TOO_LARGE,
    AttachmentLimits,
    decode,
    image_type,
)
from rawp.errors import BadRequest, Forbidden
from rawp.events import Attachment

DEFAULT_ATTACHMENTS_DIR = ".rawp/attachments"
NOT_SAVED = "ATTACHMENT_NOT_SAVED"
MAX_NAME_BYTES = 120  # well inside every file system's 255-byte name limit, suffix included
MAX_SUFFIX = 1000


class AttachmentRefused(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Received:
    """One attachment of a prompt, decoded and checked."""

    name: str
    mime_type: str
    data: bytes
    encoded: str
    image_type: str | None  # the image type its bytes are, or None for any other file


def receive(
    attachments: Sequence[Attachment] | None, limits: AttachmentLimits = DEFAULT_LIMITS
) -> list[Received]:
    """Rule 1: the attachments of a request, decoded, or `AttachmentRefused`."""
    items = list(attachments or ())
    if len(items) > limits.max_count:  # before decoding anything
        raise AttachmentRefused(
            TOO_LARGE, f"at most {limits.max_count} attachments fit in one prompt"
        )
    received = []
    for item in items:
        data = decode(item.data)
        if data is None:
            raise AttachmentRefused(INVALID, f"{item.name}: its data is not base64")
        received.append(Received(item.name, item.mime_type, data, item.data, image_type(data)))
    if problem := limits.refusal([(r.name, len(r.data)) for r in received]):
        raise AttachmentRefused(TOO_LARGE, problem)
    return received


def check_attachments_dir(value: object) -> str:
    """The agents file's `attachments_dir`: a relative path that stays inside the workspace."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError("`attachments_dir` must be a non-empty path relative to the workspace")
    path = PurePosixPath(value)
    if path.is_absolute() or ".." in path.parts or "\\" in value or "\x00" in value:
        raise ValueError(
            "`attachments_dir` must be relative to the workspace, without `..` (e.g. "
            f"{DEFAULT_ATTACHMENTS_DIR!r})"
        )
    return value


def safe_name(name: str) -> str:
    """Rule 3: a file name made only of letters, digits, `.`, `_` and `-`, never hidden, never
    empty, at most MAX_NAME_BYTES in UTF-8, keeping its extension where it can."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    cleaned = "".join(c if c.isalnum() or c in "._-" else "_" for c in base).lstrip(".-_")
    stem, dot, suffix = cleaned.rpartition(".")
    if not dot or not stem:
        stem, suffix = cleaned, ""
    suffix = suffix[:16]
    stem = _fit(stem, MAX_NAME_BYTES - len(suffix.encode()) - 1) or "attachment"
    return f"{stem}.{suffix}" if suffix else stem


def _fit(text: str, limit: int) -> str:
    while len(text.encode()) > limit:
        text = text[:-1]
    return text


def save_attachment(workspace: Path, folder: str, name: str, data: bytes) -> str:
    """Rule 3: write `data` under `folder` of `workspace`; return its workspace-relative path."""
    root = Path(os.path.realpath(workspace))
    guard = PathGuard([root])
    try:
        directory = guard.resolve(folder, workspace=root, relative_to=root)
        directory.mkdir(parents=True, exist_ok=True)
        # Again after mkdir: a link put in place meanwhile must not lead the write outside.
        directory = guard.resolve(folder, workspace=root, relative_to=root)
    except (Forbidden, BadRequest) as exc:
        raise AttachmentRefused(
            NOT_SAVED, f"the attachments folder {folder!r}: {exc.message}"
        ) from None
    except OSError as exc:
        raise AttachmentRefused(
            NOT_SAVED, f"the attachments folder {folder!r} cannot be made: {exc.strerror}"
        ) from None
    clean = safe_name(name)
    stem, dot, suffix = clean.rpartition(".")
    if not dot:
        stem, suffix = clean, ""
    for n in range(MAX_SUFFIX):
        candidate = directory / (clean if n == 0 else f"{stem}-{n}{dot}{suffix}")
        try:
            fd = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        except FileExistsError:
            continue
        except OSError as exc:
            raise AttachmentRefused(NOT_SAVED, f"{name} cannot be saved: {exc.strerror}") from None
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        return str(candidate.relative_to(root))
    raise AttachmentRefused(NOT_SAVED, f"{name}: {MAX_SUFFIX} files of that name exist already")
