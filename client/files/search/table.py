"""The index's paths, kept compact: a directory table plus interned names, no string per file.

At a million files a Python `str` per path (about 120 bytes) plus a dict entry would by itself
exceed the index's budget (≤ 150 bytes of RSS a file, frizbee's copy of the path included), so:

Rule 1: every path component (a file name, a directory name) is stored once, in `names`; a
        monorepo repeats them (`index.ts`, `BUILD.bazel`, `src`): ~24,000 names for 1,000,000
        files.
Rule 2: a directory is a row of six `array('I')` columns: its parent, its name, its first
        child and next sibling (the tree, so a path is found by descending it without a dict
        of every directory), and the block of file slots the walk listed for it.
Rule 3: a file is a slot in two columns, its directory and its name: 8 bytes a file. A file
        found after the walk gets a new slot at the end and is listed in `_extra` under its
        directory; a removed file keeps its slot, its name marked `GONE` (views refer to slots,
        and a view still reads the name of a file it is told was removed).
Rule 4: a path is rebuilt on demand (`path`), or for every directory at once (`dir_paths`) when
        a view is built; ordering is the walk's, which the views do not rely on.
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence

DEAD = 0xFFFFFFFF  # a view position whose file was removed (view.py)
GONE = 0x80000000  # set in `file_name` of a removed slot: its name stays readable
NONE = 0xFFFFFFFF  # no child / no sibling
ROOT = 0


class PathTable:
    __slots__ = (
        "_extra",
        "_name_ids",
        "arranged",
        "dead",
        "dir_child",
        "dir_count",
        "dir_first",
        "dir_name",
        "dir_parent",
        "dir_sibling",
        "file_dir",
        "file_name",
        "names",
    )  # fmt: skip

    def __init__(self) -> None:
        self.names: list[str] = [""]
        self._name_ids: dict[str, int] = {"": 0}
        self.dir_parent = array("I", [ROOT])
        self.dir_name = array("I", [0])
        self.dir_child = array("I", [NONE])
        self.dir_sibling = array("I", [NONE])
        self.dir_first = array("I", [0])
        self.dir_count = array("I", [0])
        self.file_dir = array("I")
        self.file_name = array("I")
        self._extra: dict[int, list[int]] = {}  # directory → slots added after its block
        self.dead = 0
        # `arrange`'s answer while the table is as the walk made it; the first view takes it
        self.arranged: tuple[bytes, bytes, bytes, list[int]] | None = None

    # --- names and directories -------------------------------------------------------------

    def intern(self, name: str) -> int:
        found = self._name_ids.get(name)
        if found is None:
            found = self._name_ids[name] = len(self.names)
            self.names.append(name)
        return found

    def add_dir(self, parent: int, name: str) -> int:
        """A new directory `name` under `parent` (the caller knows it is not there yet)."""
        new = len(self.dir_parent)
        self.dir_parent.append(parent)
        self.dir_name.append(self.intern(name))
        self.dir_child.append(NONE)
        self.dir_sibling.append(self.dir_child[parent])
        self.dir_child[parent] = new
        self.dir_first.append(0)
        self.dir_count.append(0)
        return new

    def add_dirs(self, parent: int, names: list[str]) -> int:
        """New directories `names` under `parent` (none there yet), as one block of ids from
        the one returned: `add_dir` for a whole listing, with no per-directory appends."""
        first, count = len(self.dir_parent), len(names)
        if not count:
            return first
        self.dir_parent.extend(array("I", [parent]) * count)
        self.dir_name.extend(self._ids(names))
        self.dir_child.extend(array("I", [NONE]) * count)
        self.dir_sibling.extend(range(first + 1, first + count))
        self.dir_sibling.append(self.dir_child[parent])
        self.dir_child[parent] = first
        zeros = array("I", [0]) * count
        self.dir_first.extend(zeros)
        self.dir_count.extend(zeros)
        return first

    def children(self, parent: int) -> Iterator[int]:
        child = self.dir_child[parent]
        while child != NONE:
            yield child
            child = self.dir_sibling[child]

    def child_dir(self, parent: int, name: str) -> int | None:
        name_id = self._name_ids.get(name)
        if name_id is None:
            return None
        for child in self.children(parent):
            if self.dir_name[child] == name_id:
                return child
        return None

    def find_dir(self, dir_rel: str) -> int | None:
        """The directory `dir_rel` (`""` is the root), None if the table has none."""
        current: int | None = ROOT
        for part in dir_rel.split("/") if dir_rel else ():
            current = self.child_dir(current, part)  # type: ignore[arg-type]
            if current is None:
                return None
        return current

    def ensure_dir(self, dir_rel: str) -> int:
        current = ROOT
        for part in dir_rel.split("/") if dir_rel else ():
            found = self.child_dir(current, part)
            current = self.add_dir(current, part) if found is None else found
        return current

    def subtree(self, top: int) -> list[int]:
        """`top` and every directory below it."""
        found, pending = [], [top]
        while pending:
            current = pending.pop()
            found.append(current)
            pending.extend(self.children(current))
        return found

    def dir_path(self, dir_id: int) -> str:
        parts = []
        while dir_id != ROOT:
            parts.append(self.names[self.dir_name[dir_id]])
            dir_id = self.dir_parent[dir_id]
        return "/".join(reversed(parts))

    def dir_paths(self) -> list[str]:
        """Every directory's path with a trailing `/` (`""` for the root), by id. A parent
        always has a smaller id than its children, so one pass in id order builds them all."""
        paths = [""]
        names, parents, own = self.names, self.dir_parent, self.dir_name
        for dir_id in range(1, len(parents)):
            paths.append(paths[parents[dir_id]] + names[own[dir_id]] + "/")
        return paths

    def graft(self, sub: PathTable, places: dict[int, int]) -> None:
        """Take in a table another process walked (walk_parallel.py rule 3): each directory of
        `sub` named in `places` — its ROOT's children — *is* the directory of this table it
        maps to, which had not been listed yet; everything below those is new here. `sub` is
        as a first walk made it: no slot added or removed since."""
        count = len(sub.dir_parent)
        new_id = [NONE] * count
        fresh: list[int] = []
        next_id = len(self.dir_parent)
        for dir_id in range(1, count):
            here = places.get(dir_id)
            if here is None:
                fresh.append(dir_id)
                here, next_id = next_id, next_id + 1
            new_id[dir_id] = here

        def linked(column: array, dirs: Iterable[int]) -> list[int]:
            return [NONE if (to := column[d]) == NONE else new_id[to] for d in dirs]

        names = self._ids(sub.names)
        file_base = len(self.file_dir)
        for dir_id, here in places.items():
            assert self.dir_child[here] == NONE and not self.dir_count[here], "listed twice"
            self.dir_child[here] = linked(sub.dir_child, (dir_id,))[0]
            if sub.dir_count[dir_id]:
                self.dir_first[here] = sub.dir_first[dir_id] + file_base
                self.dir_count[here] = sub.dir_count[dir_id]
        self.dir_parent.extend([new_id[sub.dir_parent[d]] for d in fresh])
        self.dir_name.extend([names[sub.dir_name[d]] for d in fresh])
        self.dir_child.extend(linked(sub.dir_child, fresh))
        self.dir_sibling.extend(linked(sub.dir_sibling, fresh))
        firsts, counts = sub.dir_first, sub.dir_count
        self.dir_first.extend([firsts[d] + file_base if counts[d] else 0 for d in fresh])
        self.dir_count.extend([counts[d] for d in fresh])
        self.file_dir.extend(array("I", map(new_id.__getitem__, sub.file_dir)))
        self.file_name.extend(array("I", map(names.__getitem__, sub.file_name)))

    # --- files -----------------------------------------------------------------------------

    def add_files(self, dir_id: int, names: list[str]) -> None:
        """The walk's listing of one directory: one contiguous block of slots."""
        if not names:
            return
        if self.dir_count[dir_id]:
            for name in names:
                self.add_file(dir_id, name)
            return
        self.dir_first[dir_id] = len(self.file_dir)
        self.dir_count[dir_id] = len(names)
        self.file_name.extend(self._ids(names))
        self.file_dir.extend(array("I", [dir_id]) * len(names))

    def _ids(self, names: list[str]) -> list[int]:
        """`intern` of every name, at C speed when all are known (nearly always)."""
        ids = list(map(self._name_ids.get, names))
        if None in ids:
            ids = list(map(self.intern, names))
        return ids  # type: ignore[return-value]

    def add_file(self, dir_id: int, name: str) -> int:
        slot = len(self.file_dir)
        self.file_dir.append(dir_id)
        self.file_name.append(self.intern(name))
        self._extra.setdefault(dir_id, []).append(slot)
        return slot

    def slots_in(self, dir_id: int) -> list[int]:
        """The live file slots of one directory."""
        first = self.dir_first[dir_id]
        block = range(first, first + self.dir_count[dir_id])
        file_name = self.file_name
        return [s for s in (*block, *self._extra.get(dir_id, ())) if file_name[s] < GONE]

    def find_file(self, rel: str) -> int | None:
        dir_rel, _, name = rel.rpartition("/")
        dir_id = self.find_dir(dir_rel)
        name_id = self._name_ids.get(name)
        if dir_id is None or name_id is None:
            return None
        for slot in self.slots_in(dir_id):
            if self.file_name[slot] == name_id:
                return slot
        return None

    def remove(self, slot: int) -> None:
        if self.file_name[slot] < GONE:
            self.file_name[slot] |= GONE
            self.dead += 1

    def alive(self, slot: int) -> bool:
        return self.file_name[slot] < GONE

    def path(self, slot: int) -> str:
        directory = self.dir_path(self.file_dir[slot])
        name = self.names[self.file_name[slot] & ~GONE]
        return directory + "/" + name if directory else name

    def name(self, slot: int) -> str:
        return self.names[self.file_name[slot] & ~GONE]

    def name_of(self, name_id: int) -> str:
        """The text of a `file_name` value, marked `GONE` or not."""
        return self.names[name_id & ~GONE]

    def live_slots(self) -> Iterable[int]:
        if not self.dead:
            return range(len(self.file_dir))
        file_name = self.file_name
        return [s for s in range(len(file_name)) if file_name[s] < GONE]

    def __len__(self) -> int:
        return len(self.file_dir) - self.dead

    def paths(self) -> list[str]:
        """Every live path (tests and re-walk diffs; a view never asks for all of them)."""
        dirs, names = self.dir_paths(), self.names
        return [dirs[self.file_dir[s]] + names[self.file_name[s]] for s in self.live_slots()]


def group(keys: Sequence[int]) -> tuple[array, array, list[int]]:
    """Positions grouped by key: (`held`, `held_from`, `distinct`) where the positions of the
    k-th distinct key (in order of first appearance) are `held[held_from[k]:held_from[k+1]]`,
    in position order — how a view finds the files holding a matched name."""
    ids = dict.fromkeys(keys, 0)
    for number, key in enumerate(ids):
        ids[key] = number
    name_of = list(map(ids.__getitem__, keys))
    counts = Counter(name_of)
    held_from = array("I", [0]) * (len(ids) + 1)
    running = 0
    for number in range(len(ids)):
        running += counts[number]
        held_from[number + 1] = running
    # a stable sort by name keeps each name's positions in position order
    held = array("I", sorted(range(len(keys)), key=name_of.__getitem__))
    return held, held_from, list(ids)


def arrange(table: PathTable) -> tuple[bytes, bytes, bytes, list[int]]:
    """(In the walk's child process.) The layout of a view of the whole table as stored —
    slots shortest path first, then `group` of their names — so the first view of a root
    takes it as it is instead of making a million ints in the client (walk_process.py)."""
    names, parents, own = table.names, table.dir_parent, table.dir_name
    dir_len = [0] * len(parents)
    for dir_id in range(1, len(parents)):
        dir_len[dir_id] = dir_len[parents[dir_id]] + len(names[own[dir_id]]) + 1
    name_len = list(map(len, names))
    slots = table.live_slots()
    file_dir, file_name = table.file_dir, table.file_name
    lengths = [dir_len[file_dir[s]] + name_len[file_name[s]] for s in slots]
    by_length = [slots[i] for i in sorted(range(len(lengths)), key=lengths.__getitem__)]
    held, held_from, distinct = group(list(map(file_name.__getitem__, by_length)))
    return array("I", by_length).tobytes(), held.tobytes(), held_from.tobytes(), distinct


def from_paths(paths: Iterable[str]) -> PathTable:
    """A table of these root-relative file paths (a listing such as `git ls-files`)."""
    table = PathTable()
    by_dir: dict[str, list[str]] = {}
    for rel in paths:
        dir_rel, _, name = rel.rpartition("/")
        by_dir.setdefault(dir_rel, []).append(name)
    ids = {"": ROOT}
    for dir_rel, names in by_dir.items():
        dir_id = ids.get(dir_rel)
        if dir_id is None:
            dir_id = ids[dir_rel] = _dir_of(table, dir_rel, ids)
        table.add_files(dir_id, names)
    return table


def _dir_of(table: PathTable, dir_rel: str, ids: dict[str, int]) -> int:
    parent_rel, _, name = dir_rel.rpartition("/")
    parent = ids.get(parent_rel)
    if parent is None:
        parent = ids[parent_rel] = _dir_of(table, parent_rel, ids)
    return table.add_dir(parent, name)


_COLUMNS = (
    "dir_parent", "dir_name", "dir_child", "dir_sibling", "dir_first", "dir_count",
    "file_dir", "file_name",
)  # fmt: skip


def pack(table: PathTable) -> tuple[str, list[bytes], dict[int, list[int]], int]:
    """The table as plain data, to cross a process boundary (walk_process.py). Names
    cannot hold NUL on any file system, so one NUL-joined text carries them all."""
    columns = [getattr(table, column).tobytes() for column in _COLUMNS]
    return "\0".join(table.names), columns, table._extra, table.dead


def unpack(packed: tuple[str, list[bytes], dict[int, list[int]], int]) -> PathTable:
    text, columns, extra, dead = packed
    table = PathTable()
    table.names = text.split("\0")
    table._name_ids = dict(zip(table.names, range(len(table.names)), strict=True))
    for column, data in zip(_COLUMNS, columns, strict=True):
        values = array("I")
        values.frombytes(data)
        setattr(table, column, values)
    table._extra, table.dead = extra, dead
    return table


def compacted(table: PathTable) -> PathTable:
    """The same paths without the removed slots (new slot numbers: views rebuild)."""
    fresh = PathTable()
    remap = {ROOT: ROOT}
    for dir_id in range(1, len(table.dir_parent)):
        remap[dir_id] = fresh.add_dir(
            remap[table.dir_parent[dir_id]], table.names[table.dir_name[dir_id]]
        )
    for dir_id in range(len(table.dir_parent)):
        fresh.add_files(
            remap[dir_id], [table.names[table.file_name[s]] for s in table.slots_in(dir_id)]
        )
    return fresh
