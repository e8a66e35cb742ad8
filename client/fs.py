"""`POST /v1/fs/list` (RAWP §4.4, A-13): one directory's entries, confined (§7.2).

Each entry has `name`, `type` (`file`, `directory`, `symlink`, `other`), `size` (bytes, files
only) and `mtime` (ISO 8601). Entries are sorted directories first, then by name. A symlink is
reported as a symlink and never followed, so a listing never reveals what lies outside.
"""

from __future__ import annotations

import asyncio
import os
import stat
from datetime import UTC, datetime
from typing import Any

from client.paths import PathGuard
from rawp.clock import iso
from rawp.errors import BadRequest, NotFound

MAX_ENTRIES = 10_000


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
