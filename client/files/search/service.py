"""`control.file.search` → `session.file.candidates` (DPS §16.1): the service the WebSocket
handler calls.

Rule 1: nothing here walks the tree per keystroke: each allowed root has one index (index.py),
        each kind of search one view (view.py), both kept fresh by the watcher.
Rule 2: CPU work runs on one dedicated search thread, never on the event loop. One thread keeps
        the views single-threaded (view.py Rule 1) and queries in arrival order.
Rule 3: cancelling `search()` (control.file.search.cancel, A-30) raises CancelledError at once
        and tells the search thread to drop the work; no result for that query is returned.
Rule 4: `max_results` above 50 is clamped to 50 (A-28); an empty query lists the most
        recently modified files (F-SRCH-03).
"""

from __future__ import annotations

import asyncio
import mimetypes
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

from client.files.search.index import RootIndex
from client.files.search.ranking import Ranked, rank
from client.files.search.scope import Part, normalise_roots, resolve_scope
from client.files.search.view import SearchView, ViewKey, normalise_extensions
from client.files.search.walk import Stamp
from rawp.clock import SYSTEM_CLOCK, Clock, iso
from rawp.events import FileCandidate, FileCandidates, FileSearch, MatchRange

MAX_RESULTS = 50  # DPS §16.1.1
VIEW_CACHE = 8  # views kept: one per (workspace, scope, filters) in recent use
SCOPE_TTL_S = 2.0  # how long a workspace's resolved scope is reused
SCOPE_CACHE = 256

# Python's built-in table only (not the machine's /etc/mime.types), so answers do not depend on
# the host, plus IANA types it lacks before Python 3.13. TypeScript is left out: the table calls
# `.ts` an MPEG transport stream, and TypeScript has no IANA type.
_MIME = mimetypes.MimeTypes()
for _extension, _type in {
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".yaml": "application/yaml",
    ".yml": "application/yaml",
    ".toml": "application/toml",
    ".mjs": "text/javascript",
}.items():
    _MIME.add_type(_type, _extension)
_NOT_MIME = frozenset({".ts", ".tsx", ".mts", ".cts"})


class FileSearchService:
    def __init__(
        self,
        allowed_roots: Sequence[Path],
        *,
        respect_gitignore: bool = True,
        watch: bool = True,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._roots = normalise_roots(allowed_roots)
        self._clock = clock  # the scope cache's age, and each index's re-walk pace
        self._respect_gitignore = respect_gitignore
        self._watch = watch
        self._indexes: dict[str, RootIndex] = {}
        self._views: OrderedDict[ViewKey, SearchView] = OrderedDict()
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rawp-file-search")
        self._scopes: dict[tuple[str, str], tuple[float, tuple[str, list[Part]]]] = {}
        self._closed = False

    async def search(self, request: FileSearch, workspace: Path) -> FileCandidates:
        if self._closed:
            raise RuntimeError("FileSearchService is closed")
        real_workspace, parts = await self._resolve(request.scope, workspace)
        if not parts:
            return FileCandidates(
                query_id=request.query_id, candidates=[], total_count=0, truncated=False
            )
        indexes = [self._index(part.root) for part in parts]
        for index in indexes:
            await index.ready()
        filters = request.filters
        key = ViewKey(
            workspace=real_workspace,
            parts=tuple(parts),
            extensions=normalise_extensions(filters.extensions if filters else None),
            excludes=tuple(p for p in (filters.exclude_patterns or []) if p.strip())
            if filters
            else (),
        )
        view = self._view(key, indexes)
        limit = min(request.max_results, MAX_RESULTS)
        cancel = threading.Event()
        job = self._thread.submit(_run, view, request.query.strip(), limit, cancel)
        try:
            ranked, total = await asyncio.wrap_future(job)
        except asyncio.CancelledError:
            cancel.set()
            raise
        candidates = [_candidate(*found) for found in ranked]
        return FileCandidates(
            query_id=request.query_id,
            candidates=candidates,
            total_count=total,
            truncated=total is None or total > len(candidates),
        )

    async def settled(self, workspace: Path, scope: str = "workspace") -> None:
        """Wait until the indexes a search from `workspace` uses are built and watched, with
        no background re-walk running (benchmarks and tests; searches never need it)."""
        _, parts = await self._resolve(scope, workspace)
        for part in parts:
            await self._index(part.root).settled()

    async def close(self) -> None:
        """Stop the watchers and the search thread."""
        self._closed = True
        await asyncio.gather(*(index.close() for index in self._indexes.values()))
        self._thread.shutdown(wait=False, cancel_futures=True)

    async def _resolve(self, scope: str, workspace: Path) -> tuple[str, list[Part]]:
        """The scope's parts. Resolving touches the disk (realpath, looking for `.git`), so it
        runs in a thread — and is remembered for `SCOPE_TTL_S`, since a user types several
        queries a second from the same workspace and each thread hop costs latency."""
        key = (scope, str(workspace))
        now = self._clock.monotonic()
        cached = self._scopes.get(key)
        if cached is not None and now - cached[0] < SCOPE_TTL_S:
            return cached[1]
        resolved = await asyncio.to_thread(self._scope, scope, workspace)
        if len(self._scopes) >= SCOPE_CACHE:
            self._scopes.clear()
        self._scopes[key] = (now, resolved)
        return resolved

    def _scope(self, scope: str, workspace: Path) -> tuple[str, list[Part]]:
        real = os.path.realpath(workspace)
        return real, resolve_scope(scope, real, self._roots)

    def _index(self, root: str) -> RootIndex:
        index = self._indexes.get(root)
        if index is None:
            index = RootIndex(
                root,
                respect_gitignore=self._respect_gitignore,
                watch=self._watch,
                clock=self._clock,
            )
            self._indexes[root] = index
        return index

    def _view(self, key: ViewKey, indexes: list[RootIndex]) -> SearchView:
        view = self._views.get(key)
        if view is None:
            view = SearchView(key, indexes)
            self._views[key] = view
            while len(self._views) > VIEW_CACHE:
                self._views.popitem(last=False)
        self._views.move_to_end(key)
        return view


Found = tuple[Ranked | None, Stamp, str]  # (ranking, or None for recency; size+mtime; path)


def _run(
    view: SearchView, query: str, limit: int, cancel: threading.Event
) -> tuple[list[Found], int | None]:
    """The search thread's part: catch up with the index, then rank. Entries and paths are
    read here, in the only thread that changes the view."""
    view.sync(cancel.is_set)
    if not query:
        found = [(None, p) for p in view.most_recent(limit)]
        total = view.live_count
    else:
        ranked, total = rank(view, query, limit, cancel.is_set)
        found = [(r, r.position) for r in ranked]
    # Sizes and mtimes are read now (the index keeps none). A file deleted since the last
    # sync has no stamp: it is left out, and not counted either, so the answer agrees with
    # itself before the watcher's news of the deletion arrives.
    stamped = [(r, view.stamp(p), view.display(p)) for r, p in found]
    kept = [(r, stamp, path) for r, stamp, path in stamped if stamp is not None]
    if total is not None:
        total = max(len(kept), total - (len(stamped) - len(kept)))
    return kept, total


def _mime_type(name: str) -> str | None:
    extension = os.path.splitext(name)[1].lower()
    if extension in _NOT_MIME:
        return None
    return _MIME.guess_type(name, strict=False)[0]


def _candidate(item: Ranked | None, stamp: Stamp, path: str) -> FileCandidate:
    directory, _, name = path.rpartition("/")
    extension = os.path.splitext(name)[1]
    return FileCandidate(
        path=path,
        name=name,
        directory=directory,
        extension=extension or None,
        mime_type=_mime_type(name),
        size_bytes=stamp.size,
        modified_at=iso(datetime.fromtimestamp(stamp.mtime_ns / 1e9, UTC)),
        match_score=item.score if item is not None else None,
        match_ranges=[MatchRange(start=s, end=e) for s, e in item.ranges]
        if item is not None
        else None,
    )
