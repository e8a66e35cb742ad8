"""The in-memory file index of one allowed root, kept fresh by a watcher.

Rule 1: the tree is walked once, on first use, in a worker thread; after that only the watcher
        changes the index, so a keystroke never walks the tree.
Rule 2: `entries` is changed only on the event loop, and every change is appended to `log`;
        search views (view.py) replay the log to stay in step without re-reading everything.
Rule 3: a watcher event is trusted only as "look at this path again": the path is stat'ed and
        the index made to agree with what is on disk, so events can be repeated, reordered or
        merged without harm.
Rule 4: without a working watcher (it failed, or the platform has none) the index re-walks the
        tree in the background at most every `REWALK_INTERVAL_S`, triggered by searches.
"""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import dataclass, field

from client.files.search.ignore import IgnoreRules
from client.files.search.walk import SKIPPED_DIRS, Stamp, stat_entry, unpack, walk
from client.files.search.watcher import TreeWatcher
from rawp.clock import SYSTEM_CLOCK, Clock
from runtime.tasks import TaskOwner, race

log = logging.getLogger(__name__)

REWALK_INTERVAL_S = 30.0
LOG_LIMIT = 200_000  # past this many changes views rebuild instead of replaying

ADD, REMOVE, MODIFY = "add", "remove", "modify"


@dataclass(slots=True)
class ChangeLog:
    """Changes since `epoch` began, as (kind, root-relative path); a view remembers
    (epoch, position) and replays the rest."""

    epoch: int
    items: list[tuple[str, str]] = field(default_factory=list)


class RootIndex:
    def __init__(
        self, root: str, *, respect_gitignore: bool, watch: bool = True, clock: Clock = SYSTEM_CLOCK
    ) -> None:
        self.root = root
        self._clock = clock  # paces the re-walks of an unwatched tree
        self.rules = IgnoreRules(root, enabled=respect_gitignore)
        # root-relative POSIX path → size and mtime, packed (walk.pack): one int per file
        self.entries: dict[str, int] = {}
        self.log = ChangeLog(epoch=0)
        self._watch = watch
        self._watcher: TreeWatcher | None = None
        # The build and the background re-walks run in this owner (issue 14 §6), from the
        # first search to close(); a failure is logged there once.
        self._tasks = TaskOwner(f"file index {root}", log)
        self._built: asyncio.Task[None] | None = None
        self._built_ok = False
        self._maintenance = asyncio.Lock()
        self._walked_at = 0.0
        self._background: set[asyncio.Task[None]] = set()

    # --- life cycle -----------------------------------------------------------------------

    async def ready(self) -> None:
        """Build the index on first use; every caller waits for the same build."""
        if self._built is None:
            await self._tasks.start()
            self._built = self._tasks.spawn(self._build(), name="build")
        # shield: a cancelled search must not cancel the build the next search needs
        await asyncio.shield(self._built)
        if not self._built_ok:  # the owner logged why; every search says it failed
            raise RuntimeError(f"the file index of {self.root} could not be built")
        if not self.watching and self._clock.monotonic() - self._walked_at > REWALK_INTERVAL_S:
            self._walked_at = self._clock.monotonic()  # one re-walk, not one per keystroke
            self._spawn(self._rewalk(""))

    async def settled(self) -> None:
        """Wait until the index is built, its watch is in place (or has failed) and no
        background re-walk runs — for benchmarks and tests that need a quiet index."""
        await self.ready()
        if self._watcher is not None:
            await _first(self._watcher.ready, self._watcher.stopped)
        while self._background:
            await asyncio.wait(list(self._background))
        async with self._maintenance:
            pass

    @property
    def watching(self) -> bool:
        return self._watcher is not None and not self._watcher.stopped.is_set()

    async def _build(self) -> None:
        if self._watch:
            self._watcher = TreeWatcher(self.root, self._on_batch)
            try:
                await self._watcher.start()
            except OSError:
                log.warning("cannot start the file watcher for %s", self.root, exc_info=True)
        async with self._maintenance:
            watch_was_ready = self._watcher is not None and self._watcher.ready.is_set()
            self._walked_at = self._clock.monotonic()
            self.entries = await asyncio.to_thread(walk, self.root, self.rules)
            self._reset_log()
            self._built_ok = True
        if self._watcher is not None and not watch_was_ready:
            # Files changed between the walk and the watch being in place would be missed:
            # walk once more when the watch is ready and make the index agree with it.
            self._spawn(self._rewalk_when_watching())

    async def close(self) -> None:
        if self._watcher is not None:
            await self._watcher.close()
        await self._tasks.close()  # the build, if still running, and every re-walk

    def _spawn(self, coroutine) -> None:
        task = self._tasks.spawn(coroutine, name="re-walk")
        self._background.add(task)  # settled() waits for these
        task.add_done_callback(self._background.discard)

    async def _rewalk_when_watching(self) -> None:
        assert self._watcher is not None
        await _first(self._watcher.ready, self._watcher.stopped)
        if self._watcher.ready.is_set():
            await self._rewalk("")

    # --- changes --------------------------------------------------------------------------

    def _reset_log(self) -> None:
        self.log = ChangeLog(epoch=self.log.epoch + 1)

    def _record(self, kind: str, rel: str) -> None:
        if len(self.log.items) >= LOG_LIMIT:
            self._reset_log()
        self.log.items.append((kind, rel))

    def stamp(self, rel: str) -> Stamp | None:
        packed = self.entries.get(rel)
        return unpack(packed) if packed is not None else None

    def _put(self, rel: str, stamp: int) -> None:
        known = self.entries.get(rel)
        if known != stamp:
            self.entries[rel] = stamp
            self._record(ADD if known is None else MODIFY, rel)

    def _drop(self, rel: str) -> None:
        if self.entries.pop(rel, None) is not None:
            self._record(REMOVE, rel)

    async def _rewalk(self, dir_rel: str) -> None:
        """Walk `dir_rel` again and make the index below it agree with the disk."""
        async with self._maintenance:
            self._walked_at = self._clock.monotonic()
            fresh, stale = await asyncio.to_thread(self._walk_subtree, dir_rel)
            for rel in stale:
                self._drop(rel)
            for rel, stamp in fresh.items():
                self._put(rel, stamp)

    def _walk_subtree(self, dir_rel: str) -> tuple[dict[str, int], list[str]]:
        # Worker thread; the loop does not change `entries` while `_maintenance` is held.
        self.rules.forget_below(dir_rel)
        parent_hidden = bool(dir_rel) and self.rules.ignored(dir_rel, True)
        fresh = {} if parent_hidden else walk(self.root, self.rules, start=dir_rel)
        prefix = dir_rel + "/" if dir_rel else ""
        stale = [rel for rel in self.entries if rel.startswith(prefix) and rel not in fresh]
        return fresh, stale

    async def _on_batch(self, changes: list[tuple[str, str]]) -> None:
        if self._built is not None:
            await asyncio.shield(self._built)
        async with self._maintenance:
            puts, drops, rewalks = await asyncio.to_thread(self._resolve, changes)
            for rel in drops:
                self._drop(rel)
            for rel, stamp in puts:
                self._put(rel, stamp)
        for dir_rel in rewalks:
            await self._rewalk(dir_rel)

    def _resolve(
        self, changes: list[tuple[str, str]]
    ) -> tuple[list[tuple[str, int]], list[str], list[str]]:
        """Worker thread: what the changed paths are now (Rule 3)."""
        prefix = self.root.rstrip("/") + "/"
        puts: list[tuple[str, int]] = []
        drops: list[str] = []
        gone_dirs: set[str] = set()
        rewalks: set[str] = set()
        for kind, path in changes:
            if not path.startswith(prefix):
                continue
            rel = path[len(prefix) :].replace(os.sep, "/")
            parts = rel.split("/")
            if SKIPPED_DIRS.intersection(parts):
                continue
            if parts[-1] == ".gitignore":
                rewalks.add(rel.rpartition("/")[0])
            now = stat_entry(self.root, rel)
            if now is None:
                if rel in self.entries:
                    drops.append(rel)
                else:
                    gone_dirs.add(rel)  # maybe a directory: everything below it goes too
            elif now == "dir":
                if kind == "added" and not self.rules.ignored(rel, True):
                    rewalks.add(rel)
            elif self.rules.ignored(rel, False):
                drops.append(rel)
            else:
                assert isinstance(now, int)
                puts.append((rel, now))
        if gone_dirs:
            drops.extend(rel for rel in self.entries if _under_any(rel, gone_dirs))
        return puts, drops, _outermost(rewalks)


async def _first(*events: asyncio.Event) -> None:
    await race(*(event.wait() for event in events))


def _under_any(rel: str, dirs: set[str]) -> bool:
    head = rel
    while "/" in head:
        head = head.rpartition("/")[0]
        if head in dirs:
            return True
    return False


def _outermost(dirs: set[str]) -> list[str]:
    """Drop directories that lie under another one in the set ("" is the root)."""
    if "" in dirs:
        return [""]
    return sorted(d for d in dirs if not _under_any(d, dirs))
