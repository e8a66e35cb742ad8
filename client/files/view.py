"""A search view: the files one kind of search looks at, ready for the matcher.

A view is keyed by (workspace, scope parts, filters). It holds the candidates' display paths
(`path` of §16.1.2, relative to the workspace) and file names in frizbee `Haystacks`, which
live in Rust memory and let the matcher run without the GIL.

Rule 1: a view is only touched from the service's single search thread, so it needs no lock.
Rule 2: it follows its indexes by replaying their change logs; a new index epoch (first build,
        log overflow) means a rebuild from a snapshot of the index.
Rule 3: a removed file leaves a tombstone (`members[i] = None`) because a `Haystacks` cannot
        drop an item; the ranking skips tombstones, and the view is compacted once they pile up.
Rule 4: members are plain strings (root-relative paths) and small ints (which part), never
        objects, so 100,000 of them cost a full garbage collection nothing (see walk.Stamp).
"""

from __future__ import annotations

import heapq
import os
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from frizbee import Haystacks

from client.files.ignore import GitignorePatterns
from client.files.index import ADD, MODIFY, REMOVE, RootIndex
from client.files.scope import Part
from client.files.walk import Cancelled, Stamp

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

    def admits(self, rel: str) -> bool:
        if not rel.startswith(self.base_prefix):
            return False
        if self.extensions and not rel.rpartition("/")[2].lower().endswith(self.extensions):
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
        self.members: list[str | None] = []  # root-relative path, None for a tombstone
        self.part_of = array("H")  # which part (and so which index) each member comes from
        self.displays: list[str] = []  # the candidate `path`
        self.paths = Haystacks()
        # File names once each (half as many as files: `__init__.py`, `README.md` …), and for
        # each name the positions holding it, in view order (shortest paths first).
        self.names = Haystacks()
        self.holders: list[list[int]] = []
        self._name_ids: dict[str, int] = {}
        self.dead: list[int] = []
        self._slot: dict[tuple[int, str], int] = {}  # (part, path) → position
        self._positions: list[tuple[int, int]] | None = None  # per part: (epoch, log position)
        self._recent: list[int] | None = None

    @property
    def live_count(self) -> int:
        return len(self.members) - len(self.dead)

    def name(self, position: int) -> str:
        rel = self.members[position]
        return rel.rpartition("/")[2] if rel is not None else ""

    def stamp(self, position: int) -> Stamp | None:
        """Size and mtime now (None if the file went since the last sync)."""
        rel = self.members[position]
        if rel is None:
            return None
        return self._indexes[self.part_of[position]].entries.get(rel)

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
            for kind, rel in items:
                self._apply(part_no, kind, rel)
            positions.append((epoch, position + len(items)))
        self._positions = positions
        if len(self.dead) > max(1024, len(self.members) // 8):
            self._compact()

    def _apply(self, part_no: int, kind: str, rel: str) -> None:
        self._recent = None
        if kind == ADD:
            # present already: an ADD replayed after a rebuild (see `_rebuild`)
            if (part_no, rel) not in self._slot and self._membership[part_no].admits(rel):
                self._add(part_no, rel)
        elif kind == REMOVE:
            slot = self._slot.pop((part_no, rel), None)
            if slot is not None:
                self.members[slot] = None
                self.dead.append(slot)
        elif kind != MODIFY:
            raise ValueError(f"unknown change {kind!r}")

    def _add(self, part_no: int, rel: str) -> None:
        self._slot[part_no, rel] = len(self.members)
        self.members.append(rel)
        self.part_of.append(part_no)
        display = self._membership[part_no].display(rel)
        self.displays.append(display)
        self.paths.append(display)
        self._hold(rel.rpartition("/")[2], len(self.members) - 1)

    def _hold(self, name: str, position: int) -> None:
        name_id = self._name_ids.get(name)
        if name_id is None:
            name_id = self._name_ids[name] = len(self.holders)
            self.holders.append([])
            self.names.append(name)
        self.holders[name_id].append(position)

    def _rebuild(self, cancelled: Callable[[], bool]) -> None:
        # Log positions first, snapshot second: a change landing in between is replayed once
        # more on the next sync, which `_apply` tolerates.
        positions = [(index.log.epoch, len(index.log.items)) for index in self._indexes]
        members: list[str | None] = []
        part_of = array("H")
        displays: list[str] = []
        for part_no, index in enumerate(self._indexes):
            membership = self._membership[part_no]
            snapshot = list(index.entries)  # one C call: atomic under the GIL
            for count, rel in enumerate(snapshot):
                if count % CHECK_EVERY == 0 and cancelled():
                    raise Cancelled
                if membership.admits(rel):
                    members.append(rel)
                    part_of.append(part_no)
                    displays.append(membership.display(rel))
        # Shortest paths first: frizbee breaks ties by position, and so the ranking's pools
        # (ranking.py Rule 3) hold the short paths of a tie, which the final order prefers.
        order = sorted(range(len(displays)), key=lambda i: len(displays[i]))
        self._install(
            [members[i] for i in order],
            array("H", (part_of[i] for i in order)),
            [displays[i] for i in order],
        )
        self._positions = positions

    def _compact(self) -> None:
        keep = [i for i, rel in enumerate(self.members) if rel is not None]
        self._install(
            [self.members[i] for i in keep],
            array("H", (self.part_of[i] for i in keep)),
            [self.displays[i] for i in keep],
        )

    def _install(self, members: list[str | None], part_of: array, displays: list[str]) -> None:
        self.members, self.part_of, self.displays = members, part_of, displays
        self.holders, self._name_ids = [], {}
        self.names = Haystacks()
        names: list[str] = []
        for position, rel in enumerate(members):
            if rel is not None:
                name = rel.rpartition("/")[2]
                name_id = self._name_ids.get(name)
                if name_id is None:
                    name_id = self._name_ids[name] = len(names)
                    names.append(name)
                    self.holders.append([])
                self.holders[name_id].append(position)
        self.paths, self.names = Haystacks(displays), Haystacks(names)
        self.dead = []
        self._slot = {(part_of[i], rel): i for i, rel in enumerate(members) if rel is not None}
        self._recent = None

    # --- the empty query ---------------------------------------------------------------------

    def most_recent(self, limit: int) -> list[int]:
        """Positions of the most recently modified files, newest first (F-SRCH-03)."""
        if self._recent is None:
            tables = [index.entries for index in self._indexes]
            members, part_of, displays = self.members, self.part_of, self.displays
            unknown = Stamp(0, 0)

            def newest_first(i: int) -> tuple[int, int]:
                stamp = tables[part_of[i]].get(members[i], unknown)  # type: ignore[arg-type]
                return stamp.mtime_ns, -len(displays[i])

            live = (i for i, rel in enumerate(members) if rel is not None)
            self._recent = heapq.nlargest(RECENT_LIMIT, live, key=newest_first)
        return self._recent[:limit]
