"""A search view: the files one kind of search looks at, ready for the matcher.

A view is keyed by (workspace, scope parts, filters). It holds the candidates' display paths
(`path` of §16.1.2, relative to the workspace) and file names in frizbee `Haystacks`, which
live in Rust memory and let the matcher run without the GIL.

Rule 1: a view is only touched from the service's single search thread, so it needs no lock.
Rule 2: it follows its indexes by replaying their change logs; a new index epoch (first build,
        log overflow) means a rebuild from a snapshot of the index.
Rule 3: a removed file leaves a tombstone (`members[i] = None`) because a `Haystacks` cannot
        drop an item; the ranking skips tombstones, and the view is compacted once they pile up.
"""

from __future__ import annotations

import heapq
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from frizbee import Haystacks

from client.files.ignore import GitignorePatterns
from client.files.index import ADD, MODIFY, REMOVE, RootIndex
from client.files.scope import Part
from client.files.walk import Cancelled, FileEntry

RECENT_LIMIT = 50
CHECK_EVERY = 4096  # items between two looks at the cancel flag


@dataclass(frozen=True, slots=True)
class ViewKey:
    workspace: str
    parts: tuple[Part, ...]
    extensions: tuple[str, ...]
    excludes: tuple[str, ...]


def normalise_extensions(extensions: Sequence[str] | None) -> tuple[str, ...]:
    """`['TS', '.tsx']` → `('.ts', '.tsx')`: case-insensitive, leading dot optional."""
    cleaned = {e.strip().lower() for e in extensions or () if e.strip().strip(".")}
    return tuple(sorted(e if e.startswith(".") else "." + e for e in cleaned))


class _Membership:
    """Whether an entry of one part belongs to the view, and how its `path` is written."""

    def __init__(self, key: ViewKey, part: Part, excludes: GitignorePatterns | None) -> None:
        self.base_prefix = part.base + "/" if part.base else ""
        self.extensions = key.extensions
        self.excludes = excludes
        self.root = part.root
        self.workspace = key.workspace
        self.ws_prefix: str | None = None  # the workspace, root-relative, when in this root
        if _within(key.workspace, part.root):
            ws_rel = os.path.relpath(key.workspace, part.root)
            self.ws_prefix = "" if ws_rel == "." else ws_rel + "/"
        self._dir_display: dict[str, str] = {}

    def admits(self, entry: FileEntry) -> bool:
        rel = entry.rel
        if not rel.startswith(self.base_prefix):
            return False
        if self.extensions and not entry.name.lower().endswith(self.extensions):
            return False
        return not (
            self.excludes is not None and self.excludes.decide(rel[len(self.base_prefix) :])
        )

    def display(self, rel: str) -> str:
        """The candidate `path`: relative to the workspace, with `..` when outside it."""
        if self.ws_prefix is not None and rel.startswith(self.ws_prefix):
            return rel[len(self.ws_prefix) :]
        directory, _, name = rel.rpartition("/")
        prefix = self._dir_display.get(directory)
        if prefix is None:
            absolute = os.path.join(self.root, directory) if directory else self.root
            prefix = os.path.relpath(absolute, self.workspace).replace(os.sep, "/") + "/"
            self._dir_display[directory] = prefix
        return prefix + name


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


class SearchView:
    def __init__(self, key: ViewKey, indexes: Sequence[RootIndex]) -> None:
        self.key = key
        self._indexes = list(indexes)
        excludes = GitignorePatterns(key.excludes) if key.excludes else None
        self._membership = [_Membership(key, part, excludes) for part in key.parts]
        self.members: list[FileEntry | None] = []
        self.displays: list[str] = []
        self.paths = Haystacks()
        self.names = Haystacks()
        self.dead: list[int] = []
        self._slot: dict[int, int] = {}  # id(entry) → position
        self._positions: list[tuple[int, int]] | None = None  # per part: (epoch, log position)
        self._recent: list[int] | None = None

    @property
    def live_count(self) -> int:
        return len(self.members) - len(self.dead)

    # --- keeping up with the indexes (search thread only) ------------------------------------

    def sync(self, cancelled: Callable[[], bool]) -> None:
        logs = [index.log for index in self._indexes]
        if self._positions is None or any(
            log.epoch != epoch for log, (epoch, _) in zip(logs, self._positions, strict=True)
        ):
            self._rebuild(cancelled)
            return
        positions = []
        for part_no, (log, (epoch, position)) in enumerate(zip(logs, self._positions, strict=True)):
            items = log.items[position:]  # one slice: atomic while the loop appends
            for kind, entry in items:
                self._apply(part_no, kind, entry)
            positions.append((epoch, position + len(items)))
        self._positions = positions
        if len(self.dead) > max(1024, len(self.members) // 8):
            self._compact()

    def _apply(self, part_no: int, kind: str, entry: FileEntry) -> None:
        self._recent = None
        if kind == ADD:
            # present already: an ADD replayed after a rebuild (see `_rebuild`)
            if id(entry) not in self._slot and self._membership[part_no].admits(entry):
                self._add(part_no, entry)
        elif kind == REMOVE:
            slot = self._slot.pop(id(entry), None)
            if slot is not None:
                self.members[slot] = None
                self.dead.append(slot)
        elif kind != MODIFY:
            raise ValueError(f"unknown change {kind!r}")

    def _add(self, part_no: int, entry: FileEntry) -> None:
        self._slot[id(entry)] = len(self.members)
        self.members.append(entry)
        display = self._membership[part_no].display(entry.rel)
        self.displays.append(display)
        self.paths.append(display)
        self.names.append(entry.name)

    def _rebuild(self, cancelled: Callable[[], bool]) -> None:
        # Log positions first, snapshot second: a change landing in between is replayed once
        # more on the next sync, which `_apply` tolerates.
        positions = [(index.log.epoch, len(index.log.items)) for index in self._indexes]
        members: list[FileEntry | None] = []
        displays: list[str] = []
        for part_no, index in enumerate(self._indexes):
            membership = self._membership[part_no]
            snapshot = list(index.entries.values())  # one C call: atomic under the GIL
            for count, entry in enumerate(snapshot):
                if count % CHECK_EVERY == 0 and cancelled():
                    raise Cancelled
                if membership.admits(entry):
                    members.append(entry)
                    displays.append(membership.display(entry.rel))
        self._install(members, displays)
        self._positions = positions

    def _compact(self) -> None:
        keep = [i for i, entry in enumerate(self.members) if entry is not None]
        self._install([self.members[i] for i in keep], [self.displays[i] for i in keep])

    def _install(self, members: list[FileEntry | None], displays: list[str]) -> None:
        names = [entry.name for entry in members if entry is not None]
        self.members, self.displays = members, displays
        self.paths, self.names = Haystacks(displays), Haystacks(names)
        self.dead = []
        self._slot = {id(entry): i for i, entry in enumerate(members)}
        self._recent = None

    # --- the empty query ---------------------------------------------------------------------

    def most_recent(self, limit: int) -> list[int]:
        """Positions of the most recently modified files, newest first (F-SRCH-03)."""
        if self._recent is None:
            members = self.members
            live = (i for i, entry in enumerate(members) if entry is not None)
            self._recent = heapq.nlargest(
                RECENT_LIMIT,
                live,
                key=lambda i: (members[i].mtime_ns, -len(self.displays[i])),  # type: ignore[union-attr]
            )
        return self._recent[:limit]
