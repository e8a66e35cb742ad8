"""Helpers shared by the file search tests (test_files_*.py); this module holds no tests."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from client.files.search import FileSearchService
from rawp.clock import new_id
from rawp.events import FileCandidates, FileSearch, SearchFilters

WATCH_DEADLINE_S = 15.0  # generous: the machine is shared; the loop ends as soon as it holds


def make_tree(base: Path, files: dict[str, str] | list[str]) -> None:
    """Create files (POSIX relative paths) under `base`; a dict gives their contents."""
    items = files.items() if isinstance(files, dict) else ((name, "") for name in files)
    for rel, content in items:
        path = base / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)


def set_mtime(path: Path, seconds: float) -> None:
    os.utime(path, (seconds, seconds))


async def search(
    service: FileSearchService,
    workspace: Path,
    query: str,
    *,
    scope: str = "workspace",
    max_results: int = 20,
    extensions: list[str] | None = None,
    exclude_patterns: list[str] | None = None,
) -> FileCandidates:
    filters = None
    if extensions is not None or exclude_patterns is not None:
        filters = SearchFilters(extensions=extensions, exclude_patterns=exclude_patterns)
    request = FileSearch(
        query_id=new_id(),
        query=query,
        scope=scope,  # type: ignore[arg-type]
        max_results=max_results,
        filters=filters,
    )
    result = await service.search(request, workspace)
    assert result.query_id == request.query_id
    return result


async def paths(service: FileSearchService, workspace: Path, query: str, **kwargs) -> list[str]:
    result = await search(service, workspace, query, **kwargs)
    return [candidate.path for candidate in result.candidates]


async def eventually(check: Callable[[], Awaitable[bool]], what: str) -> None:
    """Poll `check` until it holds or the deadline passes (the watcher is asynchronous)."""
    deadline = time.monotonic() + WATCH_DEADLINE_S
    while True:
        if await check():
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {WATCH_DEADLINE_S} s: {what}")
        await asyncio.sleep(0.05)
