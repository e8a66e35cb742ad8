"""A search view: the files one kind of search looks at, ready for the matcher.

A view is keyed by (workspace, scope parts, filters). It holds the candidates' display paths
(`path` of §16.1.2, relative to the workspace) and file names in frizbee `Haystacks`, which
live in Rust memory and let the matcher run without the GIL — and on the Python side only
arrays of ints: for each position the index slot it shows (table.py), never a string per file.

Rule 1: a view is only touched from the service's single search thread, so it needs no lock.
Rule 2: it follows its indexes by replaying their change logs; a new index epoch (first build,
        log overflow) means a rebuild from a snapshot of the index.
Rule 3: a removed file leaves a tombstone (`members[i] = DEAD`) because a `Haystacks` cannot
        drop an item; the ranking skips tombstones, and the view is compacted once they pile up.
Rule 4: per file the view keeps frizbee's copy of the path (~103 bytes at 72 characters), its
        slot (4 bytes), its part (2) and its place in the name table (4): a path string is
        made only for the few hundred positions a query scores (`display`), so a million files
        cost a full garbage collection nothing and the view about 115 bytes a file.
"""

from __future__ import annotations

import heapq
import os
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from operator import add

from frizbee import Haystacks

from client.files.search.ignore import GitignorePatterns
from client.files.search.index import ADD, MODIFY, REMOVE, RootIndex
from client.files.search.scope import Part
from client.files.search.table import DEAD, NONE, PathTable, group
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

    @property
    def filtered(self) -> bool:
        """Whether files are admitted one by one (by extension or exclude pattern)."""
        return bool(self.extensions) or self.excludes is not None

    def dir_displays(self, dir_paths: list[str]) -> list[str | None]:
        """For every directory (paths with a trailing `/`), how its files' `path` begins —
        None for a directory outside the part's base. The common case (the whole root, the
        workspace at the root) hands the list back untouched."""
        if self.ws_prefix == "" and not self.base_prefix:
            return dir_paths  # type: ignore[return-value]
        base = self.base_prefix
        return [self.display(d + "x")[:-1] if d.startswith(base) else None for d in dir_paths]

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
        self._tables: list[PathTable] = [index.table for index in self._indexes]
        excludes = GitignorePatterns(key.excludes) if key.excludes else None
        self._membership = [_Membership(key, part, excludes) for part in key.parts]
        self.members = array("I")  # the index slot each position shows, DEAD for a tombstone
        self.part_of = array("H")  # which part (and so which index) each member comes from
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
        self._dead_display: dict[int, str] = {}  # a tombstone's path (it still matches)
        # per part, slot → position (NONE when not shown), built on the first change only
        self._position_of: list[array] | None = None
        self._positions: list[tuple[int, int]] | None = None  # per part: (epoch, log position)
        self._recent: list[int] | None = None
        self._touched: set[int] = set()  # positions added or modified since `_recent`

    @property
    def live_count(self) -> int:
        return len(self.members) - len(self.dead)

    def alive(self, position: int) -> bool:
        return self.members[position] != DEAD

    def display(self, position: int) -> str:
        """The candidate `path` of a position, made now (Rule 4)."""
        slot = self.members[position]
        if slot == DEAD:
            return self._dead_display[position]
        part = self.part_of[position]
        return self._membership[part].display(self._tables[part].path(slot))

    def name(self, position: int) -> str:
        slot = self.members[position]
        return self._tables[self.part_of[position]].name(slot) if slot != DEAD else ""

    def holders(self, name_id: int) -> list[int]:
        """The positions whose file name is name `name_id`, in view order."""
        later = self._held_later.get(name_id, [])
        if name_id + 1 >= len(self._held_from):
            return list(later)  # a name first seen after the build
        start, end = self._held_from[name_id], self._held_from[name_id + 1]
        return self._held[start:end].tolist() + later

    def stamp(self, position: int) -> Stamp | None:
        """Size and mtime now (None if the file went since the last sync)."""
        slot = self.members[position]
        if slot == DEAD:
            return None
        part = self.part_of[position]
        return self._indexes[part].stamp(self._tables[part], slot)

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
            for kind, slot in items:
                self._apply(part_no, kind, slot)
            positions.append((epoch, position + len(items)))
        self._positions = positions
        if len(self.dead) > max(1024, len(self.members) // 8):
            self._compact()

    def _position_tables(self) -> list[array]:
        if self._position_of is None:
            self._position_of = [array("I", [NONE]) * len(table.file_dir) for table in self._tables]
            for position, slot in enumerate(self.members):
                if slot != DEAD:
                    self._position_of[self.part_of[position]][slot] = position
        return self._position_of

    def _apply(self, part_no: int, kind: str, slot: int) -> None:
        if kind not in (ADD, REMOVE, MODIFY):
            raise ValueError(f"unknown change {kind!r}")
        table = self._tables[part_no]
        where = self._position_tables()[part_no]
        if len(where) < len(table.file_dir):
            where.extend(array("I", [NONE]) * (len(table.file_dir) - len(where)))
        position = where[slot]
        if kind == MODIFY:
            if position != NONE:
                self._touched.add(position)
        elif kind == ADD:
            # present already: an ADD replayed after a rebuild (see `_rebuild`)
            admitted = position == NONE and table.alive(slot)
            if admitted and self._membership[part_no].admits(table.path(slot)):
                where[slot] = len(self.members)
                self._touched.add(len(self.members))
                self._add(part_no, slot)
        elif position != NONE:
            where[slot] = NONE
            self._dead_display[position] = self.display(position)
            self.members[position] = DEAD
            self.dead.append(position)
            if self._recent is not None and position in self._recent:
                self._recent = None  # its successor is unknown: count again

    def _add(self, part_no: int, slot: int) -> None:
        self.members.append(slot)
        self.part_of.append(part_no)
        display = self.display(len(self.members) - 1)
        if not self.chunks or len(self.chunks[-1]) == CHUNK:
            self.chunks.append(Haystacks())
        self.chunks[-1].append(display)
        name = self._tables[part_no].name(slot)
        name_id = self._name_ids.get(name)
        if name_id is None:
            name_id = self._name_ids[name] = len(self._name_ids)
            self.names.append(name)
        self._held_later.setdefault(name_id, []).append(len(self.members) - 1)

    def _rebuild(self, cancelled: Callable[[], bool]) -> None:
        # Log positions first, snapshot second: a change landing in between is replayed once
        # more on the next sync, which `_apply` tolerates.
        logs = [index.log for index in self._indexes]
        positions = [(log.epoch, len(log.items)) for log in logs]
        self._tables = [log.table for log in logs]
        if self._take_arranged(positions):
            return
        picked, lengths, starts = [], [], []
        for part_no, table in enumerate(self._tables):
            chosen, sizes, shown = self._part_members(part_no, table)
            if cancelled():
                raise Cancelled
            picked.append(chosen)
            lengths += sizes
            starts.append(shown)
        # Shortest paths first: frizbee breaks ties by position, and so the ranking's pools
        # (ranking.py Rule 3) hold the short paths of a tie, which the final order prefers.
        order = sorted(range(len(lengths)), key=lengths.__getitem__)
        del lengths
        if cancelled():
            raise Cancelled
        if len(picked) == 1 and isinstance(picked[0], range):  # every slot: order is slots
            members, part_of = array("I", order), array("H", [0]) * len(order)
        else:
            slots, owners = array("I"), array("H")
            for part_no, chosen in enumerate(picked):
                slots.extend(chosen)
                owners.extend(array("H", [part_no]) * len(chosen))
            members = array("I", map(slots.__getitem__, order))
            part_of = array("H", map(owners.__getitem__, order))
        del order, picked
        self._install(members, part_of, starts)
        self._positions = positions

    def _take_arranged(self, positions: list[tuple[int, int]]) -> bool:
        """A view of one whole root, shown as stored, built while its table is as the walk
        left it: the walk's child has laid it out already (table.arrange)."""
        table = self._tables[0]
        arranged = table.arranged
        membership = self._membership[0]
        if len(self._tables) != 1 or arranged is None or membership.filtered:
            return False
        if membership.ws_prefix != "" or membership.base_prefix:
            return False
        table.arranged = None  # the table changes from now on; its memory is the view's
        by_length, held_bytes, from_bytes, keys = arranged
        members, held, held_from = array("I"), array("I"), array("I")
        members.frombytes(by_length)
        held.frombytes(held_bytes)
        held_from.frombytes(from_bytes)
        if len(members) != len(table):
            return False
        grouped = (held, held_from, list(map(table.name_of, keys)))
        part_of = array("H", [0]) * len(members)
        self._install(members, part_of, None, grouped)
        self._positions = positions
        return True

    def _part_members(
        self, part_no: int, table: PathTable
    ) -> tuple[array | range, list[int], list[str | None]]:
        """One part's admitted slots, their path lengths, and each directory's display."""
        membership = self._membership[part_no]
        shown = membership.dir_displays(table.dir_paths())
        names, file_dir, file_name = table.names, table.file_dir, table.file_name
        dir_len = [len(d) if d is not None else -1 for d in shown]
        name_len = list(map(len, names))
        if not table.dead and all(n >= 0 for n in dir_len) and not membership.filtered:
            chosen = range(len(file_dir))  # everything: C-level maps only
            sizes = list(
                map(add, map(dir_len.__getitem__, file_dir), map(name_len.__getitem__, file_name))
            )
            return chosen, sizes, shown
        paths = table.dir_paths() if membership.filtered else []
        chosen = array("I")
        for slot in table.live_slots():
            directory = file_dir[slot]
            if dir_len[directory] < 0:
                continue
            if paths and not membership.admits(paths[directory] + names[file_name[slot]]):
                continue
            chosen.append(slot)
        sizes = [dir_len[file_dir[s]] + name_len[file_name[s]] for s in chosen]
        return chosen, sizes, shown

    def _compact(self) -> None:
        keep = [i for i, slot in enumerate(self.members) if slot != DEAD]
        self._install(
            array("I", map(self.members.__getitem__, keep)),
            array("H", map(self.part_of.__getitem__, keep)),
            None,
        )

    def _group(self, members: array, part_of: array) -> tuple[array, array, list[str]]:
        """The positions grouped by file name (table.group), and the names in that order."""
        tables = self._tables
        if len(tables) == 1:
            held, held_from, keys = group(list(map(tables[0].file_name.__getitem__, members)))
            return held, held_from, list(map(tables[0].name_of, keys))
        # one name in several tables: group by the text
        texts = [tables[q].name(s) for s, q in zip(members, part_of, strict=True)]
        keys = dict.fromkeys(texts, 0)
        for number, text in enumerate(keys):
            keys[text] = number
        held, held_from, distinct = group(list(map(keys.__getitem__, texts)))
        names = list(keys)
        return held, held_from, [names[k] for k in distinct]

    def _install(
        self,
        members: array,
        part_of: array,
        shown: list[list[str | None]] | None,
        grouped: tuple[array, array, list[str]] | None = None,
    ) -> None:
        """Take these positions as the view; build the name table and the matcher's haystacks
        (`shown`: each part's directory displays, `grouped`: `_group`'s answer, when the
        caller has them)."""
        self.members, self.part_of = members, part_of
        tables = self._tables
        if grouped is None:
            grouped = self._group(members, part_of)
        held, held_from, names = grouped
        self._held, self._held_from, self._held_later = held, held_from, {}
        self._name_ids = {name: number for number, name in enumerate(names)}
        self.names = Haystacks(names)
        self.dead, self._dead_display = [], {}
        self._position_of = None
        self._recent, self._touched = None, set()
        # Last, with every lasting object made: the directory and path strings made now are
        # all dropped again, and so leave no page half-used behind them.
        if shown is None:
            shown = [self._membership[n].dir_displays(t.dir_paths()) for n, t in enumerate(tables)]
        self.chunks = [self._chunk(start, shown) for start in range(0, len(members), CHUNK)]

    def _chunk(self, start: int, shown: list[list[str | None]]) -> Haystacks:
        """The haystack of positions start..start + CHUNK, from one list: frizbee sizes it
        once (fed in batches, its growth left ~40 bytes a file more behind)."""
        return Haystacks(self._displays(start, min(start + CHUNK, len(self.members)), shown))

    def _displays(self, start: int, end: int, shown: list[list[str | None]]) -> list[str]:
        """The paths of positions start..end, made for one haystack and dropped after it."""
        members, part_of, tables = self.members, self.part_of, self._tables
        if len(tables) == 1:
            table, dirs = tables[0], shown[0]
            file_dir, file_name, names = table.file_dir, table.file_name, table.names
            chunk = members[start:end]
            try:
                return list(
                    map(
                        add,
                        map(dirs.__getitem__, map(file_dir.__getitem__, chunk)),  # type: ignore[arg-type]
                        map(names.__getitem__, map(file_name.__getitem__, chunk)),
                    )
                )
            except IndexError:
                pass  # a file removed since the snapshot (table.GONE): the careful way below
        found = []
        for position in range(start, end):
            part, slot = part_of[position], members[position]
            table = tables[part]
            found.append(shown[part][table.file_dir[slot]] + table.name(slot))  # type: ignore[operator]
        return found

    # --- the empty query ---------------------------------------------------------------------

    def most_recent(self, limit: int) -> list[int]:
        """Positions of the most recently modified files, newest first (F-SRCH-03). The
        index keeps no mtimes: the first empty query stats every file; later ones stat only
        the list they gave plus the files changed since (a removal from it counts again).
        Ties go to the earlier position — the shorter path, as the view is ordered."""
        if self._recent is None or len(self._recent) < min(RECENT_LIMIT, self.live_count):
            candidates: Sequence[int] = range(len(self.members))
        else:
            candidates = sorted(set(self._recent) | self._touched)
        self._touched = set()
        members, part_of = self.members, self.part_of
        prefixes = [
            [index.root.rstrip("/") + "/" + d for d in table.dir_paths()]
            for index, table in zip(self._indexes, self._tables, strict=True)
        ]
        keyed = []
        for position in candidates:
            slot = members[position]
            if slot == DEAD:
                continue
            table = self._tables[part_of[position]]
            path = (
                prefixes[part_of[position]][table.file_dir[slot]]
                + table.names[table.file_name[slot]]
            )
            try:
                mtime = os.stat(path).st_mtime_ns  # a symlink in the index ends at a file
            except OSError:
                continue
            keyed.append((mtime, -position))
        self._recent = [-position for _, position in heapq.nlargest(RECENT_LIMIT, keyed)]
        return self._recent[:limit]
