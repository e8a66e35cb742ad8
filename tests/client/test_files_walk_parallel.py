"""The first walk shared among forked processes (client/files/search/walk_parallel.py) finds
exactly what the one-process walk finds, on real trees on disk, and a table grafted from
helpers' pieces is a sound table."""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from client.files.search.ignore import IgnoreRules
from client.files.search.index import RootIndex
from client.files.search.table import NONE, ROOT, PathTable, arrange
from client.files.search.walk import build
from client.files.search.walk_parallel import build_shared
from tests.client.test_files_table import TREE


def make_tree(base: Path, paths: list[str], ignores: dict[str, str]) -> None:
    for rel in paths:
        target = base / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.touch()
    for dir_rel, pattern in ignores.items():
        directory = base / dir_rel
        if directory.is_dir():
            (directory / ".gitignore").write_text(pattern + "\n")


def assert_sound(table: PathTable) -> None:
    """Every directory is reached once from the root through child/sibling links, a parent's
    id is below its children's, and every file slot lies in its directory's block."""
    seen = [ROOT]
    for dir_id in table.subtree(ROOT)[1:]:
        assert table.dir_parent[dir_id] < dir_id
        seen.append(dir_id)
    assert sorted(seen) == list(range(len(table.dir_parent)))
    for dir_id in range(len(table.dir_parent)):
        first, count = table.dir_first[dir_id], table.dir_count[dir_id]
        assert all(table.file_dir[slot] == dir_id for slot in range(first, first + count))
        assert (
            table.dir_child[dir_id] == NONE or table.dir_parent[table.dir_child[dir_id]] == dir_id
        )
    assert sum(table.dir_count) == len(table.file_dir)


def walked(base: Path, shared: bool, processes: int = 3, frontier: int = 2):
    rules = IgnoreRules(str(base), enabled=True)
    if shared:
        return build_shared(str(base), rules, processes=processes, frontier=frontier)
    return build(str(base), rules), sorted(rules.loaded())


# Directories of a tree that get a .gitignore, and what it ignores (a name, or a glob).
IGNORES = st.dictionaries(
    st.sampled_from(["", "a", "a/b", "b", "c/a"]), st.sampled_from(["a", "*b*", "x", "c/"])
)
NESTED = st.lists(
    st.lists(st.sampled_from(["a", "b", "c", "x", "é"]), min_size=1, max_size=5).map("/".join),
    max_size=60,
)


@settings(max_examples=60, deadline=None)
@given(st.one_of(TREE, NESTED.map(lambda paths: [p + "/f" for p in paths])), IGNORES)
def test_a_shared_walk_finds_what_one_process_finds(paths, ignores):
    with tempfile.TemporaryDirectory(prefix="rawp-walk-") as temp:
        base = Path(temp)
        make_tree(base, paths, ignores)
        alone, alone_ruled = walked(base, shared=False)
        for processes, frontier in ((3, 1), (2, 3), (1, 1)):
            table, ruled = walked(base, True, processes, frontier)
            assert sorted(table.paths()) == sorted(alone.paths())
            assert ruled == alone_ruled
            assert_sound(table)
            for rel in table.paths():
                slot = table.find_file(rel)
                assert slot is not None and table.path(slot) == rel
            arrange(table)  # the layout the first view takes is made from it


class FailingInHelpers(IgnoreRules):
    """Rules whose reading fails in any process but the one that made them: a helper that
    dies in its walk. The maker is slow (50 ms a directory), so the helper takes some."""

    def __init__(self, root: str) -> None:
        super().__init__(root, enabled=True)
        self.maker = os.getpid()

    def drop_dir(self, dir_rel: str) -> None:  # the walk calls it in every directory
        if os.getpid() != self.maker:
            raise OSError("the helper could not read a .gitignore")
        time.sleep(0.05)
        super().drop_dir(dir_rel)


def test_a_helper_that_fails_fails_the_walk(tmp_path, capfd):
    make_tree(tmp_path, [f"d{n}/e{m}/f" for n in range(8) for m in range(8)], {})
    with pytest.raises(RuntimeError, match="walk helper failed"):
        build_shared(str(tmp_path), FailingInHelpers(str(tmp_path)), processes=2, frontier=4)
    assert "could not read a .gitignore" in capfd.readouterr().err  # its traceback is shown


def test_the_index_of_a_tree_wider_than_the_frontier_is_whole(tmp_path):
    """Through the real walk child: 700 directories wait after the root's listing, more than
    FRONTIER, so the walk is shared (where this machine has two cores)."""
    paths = [f"pkg{n}/src/mod{n}.py" for n in range(700)] + ["README.md", "pkg3/skip.log"]
    make_tree(tmp_path, paths, {"": "*.log"})

    async def index_paths() -> list[str]:
        index = RootIndex(str(tmp_path), respect_gitignore=True, watch=False)
        try:
            await index.settled()
            return sorted(index.table.paths())
        finally:
            await index.close()

    expected = [p for p in paths if not p.endswith(".log")]
    assert asyncio.run(index_paths()) == sorted([*expected, ".gitignore"])


def test_more_waiting_directories_than_the_pipe_holds_are_all_walked(tmp_path):
    """17,000 directories wait after the root's listing: one number each would be 68 KB, more
    than a pipe holds before anyone reads it (the write would block forever); they go as
    blocks of numbers."""
    paths = [f"d{n:05}/f" for n in range(17_000)]
    make_tree(tmp_path, paths, {})
    table, _ = walked(tmp_path, True, processes=2, frontier=512)
    assert sorted(table.paths()) == paths
    assert_sound(table)
