"""The compact path table of the file index (client/files/search/table.py): properties of its
encoding — paths in, the same paths out, across packing for the walk's child process, removal,
additions and compaction — and of the layout the child hands the first view (arrange)."""

from __future__ import annotations

from array import array
from itertools import pairwise

from hypothesis import given, settings
from hypothesis import strategies as st

from client.files.search.index import ChangeLog, RootIndex
from client.files.search.scope import Part
from client.files.search.table import (
    PathTable,
    arrange,
    compacted,
    from_paths,
    group,
    pack,
    unpack,
)
from client.files.search.view import SearchView, ViewKey

# Components as a file system allows them: anything but "/" and NUL (non-ASCII included).
COMPONENT = st.text(
    alphabet=st.characters(blacklist_characters="/\0", blacklist_categories=("Cs",)),
    min_size=1,
    max_size=6,
).filter(lambda c: c not in (".", ".."))
PATH = st.lists(COMPONENT, min_size=1, max_size=4).map("/".join)


def _tree(paths: list[str]) -> list[str]:
    """Paths a tree can hold at once: no file is also a directory of another path."""
    directories = {p.rsplit("/", n)[0] for p in paths for n in range(1, p.count("/") + 1)}
    return list(dict.fromkeys(p for p in paths if p not in directories))


TREE = st.lists(PATH, max_size=40).map(_tree)


@settings(max_examples=150, deadline=None)
@given(TREE)
def test_paths_round_trip(paths):
    table = from_paths(paths)
    assert sorted(table.paths()) == sorted(paths)
    assert len(table) == len(paths)
    for rel in paths:
        slot = table.find_file(rel)
        assert slot is not None and table.path(slot) == rel
        assert table.name(slot) == rel.rpartition("/")[2]
        directory = rel.rpartition("/")[0]
        assert table.dir_path(table.find_dir(directory)) == directory  # type: ignore[arg-type]
    # A path that is not there is not found (one more component below a file, at least).
    for rel in paths:
        assert table.find_file(rel + "/x") is None


@settings(max_examples=100, deadline=None)
@given(TREE)
def test_pack_round_trip(paths):
    """What crosses from the walk's child process comes out as the same table."""
    table = from_paths(paths)
    if paths:
        table.remove(table.find_file(paths[0]))  # type: ignore[arg-type]
    copy = unpack(pack(table))
    assert sorted(copy.paths()) == sorted(table.paths())
    assert copy.dir_paths() == table.dir_paths()
    assert [copy.alive(s) for s in range(len(copy.file_dir))] == [
        table.alive(s) for s in range(len(table.file_dir))
    ]


@settings(max_examples=100, deadline=None)
@given(TREE, TREE)
def test_remove_add_and_compact(first, more):
    table = from_paths(first)
    gone = first[::2]
    for rel in gone:
        slot = table.find_file(rel)
        table.remove(slot)  # type: ignore[arg-type]
        assert not table.alive(slot)  # type: ignore[arg-type]
        assert table.path(slot) == rel  # type: ignore[arg-type]  # still read (by views)
        assert table.find_file(rel) is None
    kept = [p for p in first if p not in gone]
    for rel in more:
        if rel in kept or _tree([*kept, rel]) != [*kept, rel]:
            continue  # there already, or a file where a directory is (or the reverse)
        directory, _, name = rel.rpartition("/")
        table.add_file(table.ensure_dir(directory), name)
        kept.append(rel)
    assert sorted(table.paths()) == sorted(kept)
    compact = compacted(table)
    assert sorted(compact.paths()) == sorted(kept)
    assert compact.dead == 0 and len(compact.file_dir) == len(kept)


@settings(max_examples=150, deadline=None)
@given(TREE)
def test_arrange_orders_shortest_first_and_groups_names(paths):
    """The child's layout: every live slot once, paths by length (ties by slot), and each
    name's positions exactly those showing it, in position order."""
    table = from_paths(paths)
    by_length_bytes, held_bytes, from_bytes, keys = arrange(table)
    by_length, held, held_from = array("I"), array("I"), array("I")
    by_length.frombytes(by_length_bytes)
    held.frombytes(held_bytes)
    held_from.frombytes(from_bytes)
    assert sorted(by_length) == list(range(len(paths)))
    lengths = [len(table.path(s)) for s in by_length]
    assert lengths == sorted(lengths)
    for earlier, later in pairwise(by_length):
        if len(table.path(earlier)) == len(table.path(later)):
            assert earlier < later
    for number, key in enumerate(keys):
        positions = held[held_from[number] : held_from[number + 1]].tolist()
        expected = [p for p, s in enumerate(by_length) if table.file_name[s] == key]
        assert positions == expected


@given(st.lists(st.integers(min_value=0, max_value=5), max_size=60))
def test_group_keeps_position_order(keys):
    held, held_from, distinct = group(keys)
    assert distinct == list(dict.fromkeys(keys))
    for number, key in enumerate(distinct):
        assert held[held_from[number] : held_from[number + 1]].tolist() == [
            p for p, k in enumerate(keys) if k == key
        ]


def _view(table: PathTable) -> SearchView:
    index = RootIndex("/r", respect_gitignore=False, watch=False)
    index.table = table
    index.log = ChangeLog(epoch=1, table=table)
    view = SearchView(ViewKey("/r", (Part("/r", ""),), (), ()), [index])
    view.sync(lambda: False)
    return view


@settings(max_examples=60, deadline=None)
@given(TREE)
def test_first_view_from_the_layout_equals_a_view_built_here(paths):
    """The view that takes the child's layout is the view the client would build itself."""
    here = _view(from_paths(paths))
    laid_out = from_paths(paths)
    laid_out.arranged = arrange(laid_out)
    taken = _view(laid_out)
    assert laid_out.arranged is None  # taken, and its memory with it
    assert list(taken.members) == list(here.members)
    assert [taken.display(p) for p in range(len(paths))] == [
        here.display(p) for p in range(len(paths))
    ]
    assert taken._name_ids == here._name_ids
    for number in range(len(here._name_ids)):
        assert taken.holders(number) == here.holders(number)
