"""A search view: the files one kind of search looks at, ready for the matcher.

A view is keyed by (workspace, scope parts, filters). It holds the candidates' display paths
(`path` of §16.1.2, relative to the workspace) and file names in frizbee `Haystacks`, which
live in Rust memory and let the matcher run without the GIL.

Rule 1: a view is only touched from the service's single search thread, so it needs no lock.
Rule 2: it follows its indexes by replaying their change logs; a new index epoch (first build,
        log overflow) means a rebuild from a snapshot of the index.
Rule 3: a removed file leaves a tombstone (`members[i] = None`) because a `Haystacks` cannot
        drop an item; the ranking skips tombstones, and the view is compacted once they pile up.
Rule 4: members are plain strings (root-relative paths) and arrays of ints, never per-file
        objects, so a million of them cost a full garbage collection nothing (see walk.Stamp),
        and the view adds ~30 bytes a file to the index's strings beside frizbee's copy.
"""

from __future__ import annotations

import heapq
import os
from array import array
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from operator import itemgetter, methodcaller

from frizbee import Haystacks

from client.files.search.ignore import GitignorePatterns
from client.files.search.index import ADD, MODIFY, REMOVE, RootIndex
from client.files.search.scope import Part
from client.files.search.walk import Cancelled, Stamp

RECENT_LIMIT = 50
CHUNK = 1 << 17  # 131,072 paths per haystack: a view up to this size is matched in one piece


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

    def select(self, rels: list[str]) -> tuple[list[str], list[str]]:
        """The admitted paths of `rels` and their displays. The common case — the whole root,
        no filters, the workspace at the root — hands the same list back twice, untouched."""
        if self.base_prefix or self.extensions or self.excludes is not None:
            rels = [rel for rel in rels if self.admits(rel)]
        if self.ws_prefix == "":
            return rels, rels
        return rels, [self.display(rel) for rel in rels]

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
        # The paths in chunks of CHUNK positions (chunk k holds positions k·CHUNK onwards):
        # the ranking matches the first chunk — the shortest paths — before deciding whether
        # the rest is worth matching (ranking.py Rule 5).
        self.chunks: list[Haystacks] = []
        # File names once each (a fortieth as many as files in a monorepo: `index.ts`,
        # `BUILD.bazel` …), and for each name the positions holding it, in view order
        # (shortest paths first): `_held[_held_from[n]:_held_from[n + 1]]` as built, then
        # `_held_later[n]` for files added since — two arrays instead of a million int objects.
        self.names = Haystacks()
        self._name_ids: dict[str, int] = {}
        self._held = array("I")
        self._held_from = array("I", [0])
        self._held_later: dict[int, list[int]] = {}
        self.dead: list[int] = []
        # (part, path) → position per part, built on the first change only: at a million
        # files it costs ~100 MB, and a view that never sees a change never needs it.
        self._slots: list[dict[str, int]] | None = None
        self._positions: list[tuple[int, int]] | None = None  # per part: (epoch, log position)
        self._recent: list[int] | None = None

    @property
    def live_count(self) -> int:
        return len(self.members) - len(self.dead)

    def name(self, position: int) -> str:
        rel = self.members[position]
        return rel.rpartition("/")[2] if rel is not None else ""

    def holders(self, name_id: int) -> list[int]:
        """The positions whose file name is name `name_id`, in view order."""
        later = self._held_later.get(name_id, [])
        if name_id + 1 >= len(self._held_from):
            return list(later)  # a name first seen after the build
        start, end = self._held_from[name_id], self._held_from[name_id + 1]
        return self._held[start:end].tolist() + later

    def stamp(self, position: int) -> Stamp | None:
        """Size and mtime now (None if the file went since the last sync)."""
        rel = self.members[position]
        if rel is None:
            return None
        return self._indexes[self.part_of[position]].stamp(rel)

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

    def _slot_tables(self) -> list[dict[str, int]]:
        if self._slots is None:
            self._slots = [{} for _ in self._indexes]
            for position, rel in enumerate(self.members):
                if rel is not None:
                    self._slots[self.part_of[position]][rel] = position
        return self._slots

    def _apply(self, part_no: int, kind: str, rel: str) -> None:
        self._recent = None
        if kind == ADD:
            # present already: an ADD replayed after a rebuild (see `_rebuild`)
            slots = self._slot_tables()[part_no]
            if rel not in slots and self._membership[part_no].admits(rel):
                slots[rel] = len(self.members)
                self._add(part_no, rel)
        elif kind == REMOVE:
            slot = self._slot_tables()[part_no].pop(rel, None)
            if slot is not None:
                self.members[slot] = None
                self.dead.append(slot)
        elif kind != MODIFY:
            raise ValueError(f"unknown change {kind!r}")

    def _add(self, part_no: int, rel: str) -> None:
        self.members.append(rel)
        self.part_of.append(part_no)
        display = self._membership[part_no].display(rel)
        self.displays.append(display)
        if not self.chunks or len(self.chunks[-1]) == CHUNK:
            self.chunks.append(Haystacks())
        self.chunks[-1].append(display)
        name = rel.rpartition("/")[2]
        name_id = self._name_ids.get(name)
        if name_id is None:
            name_id = self._name_ids[name] = len(self._name_ids)
            self.names.append(name)
        self._held_later.setdefault(name_id, []).append(len(self.members) - 1)

    def _rebuild(self, cancelled: Callable[[], bool]) -> None:
        # Log positions first, snapshot second: a change landing in between is replayed once
        # more on the next sync, which `_apply` tolerates.
        positions = [(index.log.epoch, len(index.log.items)) for index in self._indexes]
        members: list[str] = []
        part_of = array("H")
        displays: list[str] = []
        for part_no, index in enumerate(self._indexes):
            snapshot = list(index.entries)  # one C call: atomic under the GIL
            if cancelled():
                raise Cancelled
            chosen, shown = self._membership[part_no].select(snapshot)
            if len(self._indexes) == 1:
                members, displays = chosen, shown  # maybe one list: sorted once below
            else:
                members += chosen
                displays += shown
            part_of.extend(array("H", [part_no]) * len(chosen))
        if cancelled():
            raise Cancelled
        # Shortest paths first: frizbee breaks ties by position, and so the ranking's pools
        # (ranking.py Rule 3) hold the short paths of a tie, which the final order prefers.
        # (One part shown as stored — the workspace is the root — sorts its list in place.)
        if members is displays:
            displays.sort(key=len)
            members = list(displays)  # `_add` appends to each
        else:
            lengths = list(map(len, displays))
            order = sorted(range(len(displays)), key=lengths.__getitem__)
            members = [members[i] for i in order]
            part_of = array("H", [part_of[i] for i in order])
            displays = [displays[i] for i in order]
        self._install(members, part_of, displays)
        self._positions = positions

    def _compact(self) -> None:
        keep = [i for i, rel in enumerate(self.members) if rel is not None]
        self._install(
            [self.members[i] for i in keep],  # type: ignore[misc]
            array("H", (self.part_of[i] for i in keep)),
            [self.displays[i] for i in keep],
        )

    def _install(self, members: list[str], part_of: array, displays: list[str]) -> None:
        """Take these lists as the view; build the name table and the matcher's haystacks."""
        self.members, self.part_of, self.displays = members, part_of, displays  # type: ignore[assignment]
        # per position its name's id (C-level maps: a million positions in a few tenths of s)
        names = list(map(itemgetter(2), map(methodcaller("rpartition", "/"), members)))
        ids = dict.fromkeys(names, 0)
        for name_id, name in enumerate(ids):
            ids[name] = name_id
        name_of = list(map(ids.__getitem__, names))
        del names
        counts = Counter(name_of)
        held_from = array("I", [0]) * (len(ids) + 1)
        running = 0
        for name_id in range(len(ids)):
            running += counts[name_id]
            held_from[name_id + 1] = running
        # a stable sort by name id keeps each name's positions in view order
        self._held = array("I", sorted(range(len(members)), key=name_of.__getitem__))
        self._held_from, self._held_later, self._name_ids = held_from, {}, ids
        self.chunks = [
            Haystacks(displays[start : start + CHUNK]) for start in range(0, len(displays), CHUNK)
        ]
        self.names = Haystacks(list(ids))
        self.dead = []
        self._slots = None
        self._recent = None

    # --- the empty query ---------------------------------------------------------------------

    def most_recent(self, limit: int) -> list[int]:
        """Positions of the most recently modified files, newest first (F-SRCH-03)."""
        if self._recent is None:
            tables = [index.entries for index in self._indexes]
            members, part_of, displays = self.members, self.part_of, self.displays

            def newest_first(i: int) -> tuple[int, int]:
                packed = tables[part_of[i]].get(members[i], 0)  # type: ignore[arg-type]
                return packed >> 64, -len(displays[i])  # walk.pack: the mtime

            live = (i for i, rel in enumerate(members) if rel is not None)
            self._recent = heapq.nlargest(RECENT_LIMIT, live, key=newest_first)
        return self._recent[:limit]
