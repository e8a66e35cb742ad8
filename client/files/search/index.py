"""The in-memory file index of one allowed root, kept fresh by a watcher.

Rule 1: the tree is walked once, on first use, in a worker thread; after that only the watcher
        changes the index, so a keystroke never walks the tree.
Rule 2: `table` (table.py: a directory table and interned names, ~8 bytes a file) is changed
        only on the event loop, and every change is appended to `log` as (kind, slot);
        search views (view.py) replay the log to stay in step without re-reading everything.
        When removed slots pile up the table is compacted into a new one and the log starts
        a new epoch, so views rebuild from it.
Rule 3: a watcher event is trusted only as "look at this path again": the path is stat'ed and
        the index made to agree with what is on disk, so events can be repeated, reordered or
        merged without harm. The index keeps no size or mtime: an event on a file it holds is
        recorded as a modification (views drop their recency list), and a search stats the
        files it answers.
Rule 4: without a working watcher (it failed, or the platform has none) the index re-walks the
        tree in the background at most every `REWALK_INTERVAL_S`, triggered by searches.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import pickle
import sys
from dataclasses import dataclass, field
from pathlib import Path

from client.files.search.ignore import IgnoreRules
from client.files.search.table import PathTable, compacted, pack, unpack
from client.files.search.walk import SKIPPED_DIRS, Stamp, stat_entry
from client.files.search.watcher import TreeWatcher
from rawp.clock import SYSTEM_CLOCK, Clock
from runtime.tasks import TaskOwner, race

log = logging.getLogger(__name__)

REWALK_INTERVAL_S = 30.0
_PROJECT = str(Path(__file__).resolve().parents[3])  # where `client` imports from (the child)
LOG_LIMIT = 200_000  # past this many changes views rebuild instead of replaying

ADD, REMOVE, MODIFY = "add", "remove", "modify"


@dataclass(slots=True)
class ChangeLog:
    """Changes since `epoch` began, as (kind, slot of `table`); a view remembers
    (epoch, position) and replays the rest."""

    epoch: int
    table: PathTable
    items: list[tuple[str, int]] = field(default_factory=list)


class RootIndex:
    def __init__(
        self, root: str, *, respect_gitignore: bool, watch: bool = True, clock: Clock = SYSTEM_CLOCK
    ) -> None:
        self.root = root
        self._clock = clock  # paces the re-walks of an unwatched tree
        self.rules = IgnoreRules(root, enabled=respect_gitignore)
        self.table = PathTable()  # every indexed file (table.py)
        self.log = ChangeLog(epoch=0, table=self.table)
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
        """Build the index on first use; every caller waits for the same build. A build that
        failed (its walk child killed, a fork refused on a busy machine) fails the searches
        that waited for it, and the next search builds again: one bad moment must not leave
        the root without a search until the client restarts."""
        if self._built is None or (self._built.done() and not self._built_ok):
            if not self._tasks.running:
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
        # The walk first, the watch after it: the watcher child walks the tree too (to place
        # its watches), and on two busy cores the two walks together took twice as long as
        # the first search's walk alone. Files changed before the watch is in place are
        # caught by one more walk once it is (`_rewalk_when_watching`).
        async with self._maintenance:
            self._walked_at = self._clock.monotonic()
            answer = await _in_child(("build", self.root, self.rules.enabled))
            _, packed, ruled, arranged = answer
            self.table = await asyncio.to_thread(self._receive, packed, "", ruled)
            self.table.arranged = arranged
            # timed from the walk's end: a walk longer than the re-walk interval must not
            # start another before the watch (started next) has had its chance
            self._walked_at = self._clock.monotonic()
            self._reset_log()
            self._built_ok = True
        if self._watch:  # in the background: the first search waits for the walk alone
            self._spawn(self._start_watch())

    async def _start_watch(self) -> None:
        self._watcher = TreeWatcher(self.root, self._on_batch)
        try:
            await self._watcher.start()
        except OSError:
            log.warning("cannot start the file watcher for %s", self.root, exc_info=True)
            return
        await self._rewalk_when_watching()

    async def close(self) -> None:
        await self._tasks.close()  # the build, the watch's start and every re-walk
        if self._watcher is not None:
            await self._watcher.close()

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
        self.log = ChangeLog(epoch=self.log.epoch + 1, table=self.table)

    def _record(self, kind: str, slot: int) -> None:
        if len(self.log.items) >= LOG_LIMIT:
            self._reset_log()
        self.log.items.append((kind, slot))

    def paths(self) -> list[str]:
        """Every indexed root-relative path (tests; a search never lists them all)."""
        return self.table.paths()

    def stamp(self, table: PathTable, slot: int) -> Stamp | None:
        """Size and mtime of a file now (None if it is gone or is no file any more)."""
        now = stat_entry(self.root, table.path(slot))
        return now if isinstance(now, Stamp) else None

    def _put(self, rel: str) -> None:
        slot = self.table.find_file(rel)
        if slot is not None:
            self._record(MODIFY, slot)
            return
        dir_rel, _, name = rel.rpartition("/")
        self._record(ADD, self.table.add_file(self.table.ensure_dir(dir_rel), name))

    def _drop(self, slot: int) -> None:
        if self.table.alive(slot):
            self.table.remove(slot)
            self._record(REMOVE, slot)

    def _compact(self) -> None:
        """Rule 2: a table with many removed slots is rebuilt; views follow the new epoch."""
        if self.table.dead > max(1024, len(self.table) // 8):
            self.table = compacted(self.table)
            self._reset_log()

    def _receive(self, packed: tuple, dir_rel: str, ruled: list[str]) -> PathTable:
        """(Worker thread.) A walk's table and the `.gitignore` rules it found below `dir_rel`
        (the watcher's single-path checks ask them)."""
        self.rules.forget_below(dir_rel)
        prefix = dir_rel + "/" if dir_rel else ""
        for directory in ruled:
            if directory == dir_rel or directory.startswith(prefix):
                self.rules.load_dir(directory)
        return unpack(packed) if packed else self.table

    async def _rewalk(self, dir_rel: str) -> None:
        """Walk `dir_rel` again (in a child process) and make the index below it agree."""
        async with self._maintenance:
            self._walked_at = self._clock.monotonic()
            packed = await asyncio.to_thread(pack, self.table)
            request = ("rewalk", self.root, self.rules.enabled, dir_rel, packed)
            _, fresh, stale, ruled = await _in_child(request)
            await asyncio.to_thread(self._receive, (), dir_rel, ruled)
            for slot in stale:
                self._drop(slot)
            for rel in fresh:
                self._put(rel)
            self._compact()

    async def _on_batch(self, changes: list[tuple[str, str]]) -> None:
        if self._built is not None:
            await asyncio.shield(self._built)
        async with self._maintenance:
            puts, drops, rewalks = await asyncio.to_thread(self._resolve, changes)
            for slot in drops:
                self._drop(slot)
            for rel in puts:
                self._put(rel)
            self._compact()
        for dir_rel in rewalks:
            await self._rewalk(dir_rel)

    def _resolve(self, changes: list[tuple[str, str]]) -> tuple[list[str], list[int], list[str]]:
        """Worker thread: what the changed paths are now (Rule 3)."""
        prefix = self.root.rstrip("/") + "/"
        table = self.table
        puts: list[str] = []
        drops: list[int] = []
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
                slot = table.find_file(rel)
                if slot is not None:
                    drops.append(slot)
                else:  # maybe a directory: everything below it goes too
                    gone = table.find_dir(rel)
                    for dir_id in table.subtree(gone) if gone is not None else ():
                        drops.extend(table.slots_in(dir_id))
            elif now == "dir":
                if kind == "added" and not self.rules.ignored(rel, True):
                    rewalks.add(rel)
            elif self.rules.ignored(rel, False):
                slot = table.find_file(rel)
                if slot is not None:
                    drops.append(slot)
            else:
                puts.append(rel)
        return puts, drops, _outermost(rewalks)


async def _in_child(request: tuple) -> tuple:
    """One request to a fresh walk_process.py child (why a process: see there)."""
    path = os.environ.get("PYTHONPATH")
    env = {**os.environ, "PYTHONPATH": _PROJECT + (os.pathsep + path if path else "")}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "client.files.search.walk_process",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env=env,
    )  # fmt: skip
    try:
        out, err = await process.communicate(pickle.dumps(request))
    except asyncio.CancelledError:
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):  # it ended meanwhile: reaped already
                process.kill()
            await process.wait()
        raise
    if process.returncode != 0:
        raise RuntimeError(f"the walk of {request[1]} failed: {err.decode(errors='replace')}")
    return pickle.loads(out)


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
