"""The client's file-system helpers, all off the event loop (`asyncio.to_thread`).

`POST /v1/fs/list` (RAWP §4.4, A-13): one directory's entries, confined (§7.2).

Each entry has `name`, `type` (`file`, `directory`, `symlink`, `other`), `size` (bytes, files
only) and `mtime` (ISO 8601). Entries are sorted directories first, then by name. A symlink is
reported as a symlink and never followed, so a listing never reveals what lies outside.

`read_text` / `write_text` serve an agent's file requests (ACP `fs/*`) on paths the caller has
already confined: UTF-8, undecodable bytes replaced, at most `max_bytes` read or written
(`FileTooLarge` past it), so an agent cannot make the client hold an arbitrary file in memory.
"""

from __future__ import annotations

import asyncio
import os
import stat
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from client.files.paths import PathGuard
from rawp.clock import iso
from rawp.errors import BadRequest, NotFound

MAX_ENTRIES = 10_000


class FileTooLarge(Exception):
    """More than `max_bytes` would be read or written."""

    def __init__(self, max_bytes: int) -> None:
        super().__init__(f"larger than the {max_bytes} bytes the client reads or writes at once")
        self.max_bytes = max_bytes


async def read_text(
    path: Path, *, max_bytes: int, line: int | None = None, limit: int | None = None
) -> str:
    """`limit` lines of `path` from the 1-based `line` (all of it by default), if the text
    returned is at most `max_bytes` (UTF-8); a slice of a larger file is fine."""
    return await asyncio.to_thread(_read_lines, path, max_bytes, line, limit)


async def write_text(path: Path, content: str, *, max_bytes: int) -> None:
    """`content` written to `path` (parents created), if it is at most `max_bytes` (UTF-8)."""
    data = content.encode("utf-8", errors="replace")
    if len(data) > max_bytes:
        raise FileTooLarge(max_bytes)
    await asyncio.to_thread(_write, path, data)


def _read_lines(path: Path, max_bytes: int, line: int | None, limit: int | None) -> str:
    start = max(0, (line or 1) - 1)
    kept: list[str] = []
    size = number = 0
    with open(path, encoding="utf-8", errors="replace") as handle:
        # `readline` is bounded too, so one endless line cannot be read whole either.
        while not limit or len(kept) < limit:
            text = handle.readline(max_bytes + 1)
            if not text:
                break
            if number >= start:
                size += len(text.encode("utf-8", errors="replace"))
                if size > max_bytes:
                    raise FileTooLarge(max_bytes)
                kept.append(text)
            elif len(text) > max_bytes:
                raise FileTooLarge(max_bytes)  # a skipped line longer than the cap
            number += 1
    return "".join(kept)


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


async def list_directory(guard: PathGuard, target: object) -> dict[str, Any]:
    if target is None:
        raise BadRequest("target_path is required", "INVALID_REQUEST")
    path = guard.resolve(target)
    if not path.exists():
        raise NotFound("no such directory", "PATH_NOT_FOUND")
    if not path.is_dir():
        raise BadRequest("target_path is not a directory", "NOT_A_DIRECTORY")
    entries = await asyncio.to_thread(_scan, path)
    return {
        "target_path": str(path),
        "entries": entries[:MAX_ENTRIES],
        "truncated": len(entries) > MAX_ENTRIES,
    }


def _scan(path: os.PathLike) -> list[dict[str, Any]]:
    out = []
    with os.scandir(path) as it:
        for entry in it:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            kind = (
                "symlink"
                if stat.S_ISLNK(info.st_mode)
                else "directory"
                if stat.S_ISDIR(info.st_mode)
                else "file"
                if stat.S_ISREG(info.st_mode)
                else "other"
            )
            out.append(
                {
                    "name": entry.name,
                    "type": kind,
                    "size": info.st_size if kind == "file" else None,
                    "mtime": iso(datetime.fromtimestamp(info.st_mtime, UTC)),
                }
            )
    out.sort(key=lambda e: (e["type"] != "directory", e["name"]))
    return out
