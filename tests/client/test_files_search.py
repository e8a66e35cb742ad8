"""File search over real trees in tmp_path (DPS §16.1): fields, ordering, filters, limits,
.gitignore and symlinks. The watcher is off here (watch=False); test_files_watch.py covers it."""

from __future__ import annotations

import contextlib
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from client.files.search import FileSearchService
from rawp.clock import parse_iso
from tests.client.test_files_helpers import make_tree, paths, search, set_mtime


@pytest.fixture
async def service(tmp_path):
    service = FileSearchService([tmp_path], watch=False)
    yield service
    await service.close()


@pytest.fixture
def workspace(tmp_path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


# --- §16.1.2 fields ----------------------------------------------------------------------------


async def test_every_candidate_field(service, workspace):
    make_tree(workspace, {"src/auth.ts": "export {}\n", "docs/guide.md": "# hi\n"})
    set_mtime(workspace / "src/auth.ts", 1_700_000_000.25)

    result = await search(service, workspace, "aut")

    assert result.truncated is False
    assert result.total_count == 1
    [found] = result.candidates
    assert found.path == "src/auth.ts"
    assert found.name == "auth.ts"
    assert found.directory == "src"
    assert found.extension == ".ts"
    assert found.size_bytes == len("export {}\n")
    assert parse_iso(found.modified_at) == datetime.fromtimestamp(1_700_000_000.25, UTC)
    assert found.modified_at.endswith("Z")
    assert 0.0 < found.match_score <= 1.0
    # the spec's own example (§16.1.2): "aut" on auth.ts highlights a-u-t, end exclusive
    assert [(r.start, r.end) for r in found.match_ranges] == [(4, 7)]
    assert found.path[4:7] == "aut"


async def test_mime_type_and_top_level_directory(service, workspace):
    make_tree(workspace, ["notes.md", "main.py", "Makefile"])
    by_name = {c.name: c for c in (await search(service, workspace, "", max_results=50)).candidates}
    assert by_name["notes.md"].mime_type == "text/markdown"
    assert by_name["main.py"].mime_type == "text/x-python"
    assert by_name["Makefile"].extension is None
    assert by_name["Makefile"].mime_type is None
    assert by_name["main.py"].directory == ""  # a file at the workspace's top


async def test_ranges_index_code_points_of_the_path(service, workspace):
    make_tree(workspace, ["café/añb.py", "日本/設定.toml"])
    [found] = (await search(service, workspace, "añb")).candidates
    assert found.path == "café/añb.py"
    assert [(r.start, r.end) for r in found.match_ranges] == [(5, 8)]
    [found] = (await search(service, workspace, "設定")).candidates
    assert [found.path[r.start : r.end] for r in found.match_ranges] == ["設定"]


async def test_scores_are_normalised_and_an_exact_name_at_the_top_scores_one(service, workspace):
    make_tree(workspace, ["auth", "src/auth", "src/author.py", "a/u/t/h"])
    result = await search(service, workspace, "auth")
    scores = [c.match_score for c in result.candidates]
    assert result.candidates[0].path == "auth"
    assert scores[0] == 1.0
    assert all(0.0 < s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)


# --- ordering --------------------------------------------------------------------------------


async def test_a_name_match_ranks_above_a_scattered_path_match(service, workspace):
    make_tree(workspace, ["a/u/t/h/x.py", "deep/down/in/here/auth.ts", "arch/util/tool/hint.c"])
    found = await paths(service, workspace, "auth")
    assert found[0] == "deep/down/in/here/auth.ts"
    assert set(found) == {"a/u/t/h/x.py", "deep/down/in/here/auth.ts", "arch/util/tool/hint.c"}


async def test_exact_then_prefix_then_scattered_names(service, workspace):
    make_tree(
        workspace,
        ["lib/config", "lib/configuration.py", "lib/my_config_old.py", "lib/c_o_n_f_i_g.py"],
    )
    found = await paths(service, workspace, "config")
    assert found[:2] == ["lib/config", "lib/configuration.py"]
    assert found.index("lib/my_config_old.py") < found.index("lib/c_o_n_f_i_g.py")


async def test_query_case_is_ignored(service, workspace):
    make_tree(workspace, ["src/ReadMe.MD", "other.txt"])
    assert await paths(service, workspace, "readme") == ["src/ReadMe.MD"]
    assert await paths(service, workspace, "README") == ["src/ReadMe.MD"]


async def test_no_match_gives_an_empty_answer(service, workspace):
    make_tree(workspace, ["a.py"])
    result = await search(service, workspace, "zzz")
    assert (result.candidates, result.total_count, result.truncated) == ([], 0, False)


# --- empty query, limits ------------------------------------------------------------------------


async def test_empty_query_lists_most_recently_modified_first(service, workspace):
    names = [f"f{i}.txt" for i in range(6)]
    make_tree(workspace, names)
    for i, name in enumerate(names):
        set_mtime(workspace / name, 1_600_000_000 + i * 100)
    result = await search(service, workspace, "", max_results=4)
    assert [c.path for c in result.candidates] == ["f5.txt", "f4.txt", "f3.txt", "f2.txt"]
    assert result.truncated is True
    assert result.total_count == 6
    assert all(c.match_score is None for c in result.candidates)


async def test_blank_query_is_the_empty_query(service, workspace):
    make_tree(workspace, ["old.txt", "new.txt"])
    set_mtime(workspace / "old.txt", 1_600_000_000)
    set_mtime(workspace / "new.txt", 1_700_000_000)
    assert await paths(service, workspace, "   ") == ["new.txt", "old.txt"]


async def test_max_results_above_fifty_is_clamped(service, workspace):
    make_tree(workspace, [f"mod{i:02}.py" for i in range(60)])
    result = await search(service, workspace, "mod", max_results=500)
    assert len(result.candidates) == 50
    assert result.truncated is True
    assert result.total_count == 60


async def test_default_is_twenty_and_total_count_counts_all_matches(service, workspace):
    make_tree(workspace, [f"pkg/item{i:02}.py" for i in range(30)] + ["other/x.txt"])
    result = await search(service, workspace, "item")
    assert len(result.candidates) == 20
    assert (result.total_count, result.truncated) == (30, True)
    result = await search(service, workspace, "item", max_results=30)
    assert (len(result.candidates), result.total_count, result.truncated) == (30, 30, False)


# --- filters --------------------------------------------------------------------------------


async def test_extension_filter_is_case_insensitive_and_dot_optional(service, workspace):
    make_tree(workspace, ["a/app.ts", "a/App.TSX", "a/app.js", "a/app.d.ts", "a/tsfile"])
    found = set(await paths(service, workspace, "app", extensions=[".TS", "tsx"]))
    assert found == {"a/app.ts", "a/App.TSX", "a/app.d.ts"}
    assert await paths(service, workspace, "", extensions=[".js"]) == ["a/app.js"]


async def test_exclude_patterns_are_gitignore_style_relative_to_the_workspace(service, workspace):
    make_tree(
        workspace,
        ["node_modules/lib/index.js", "src/index.js", "pkg/node_modules/dep/index.js"],
    )
    found = set(await paths(service, workspace, "index", exclude_patterns=["node_modules/**"]))
    assert found == {"src/index.js", "pkg/node_modules/dep/index.js"}  # anchored, as in git
    found = set(await paths(service, workspace, "index", exclude_patterns=["node_modules/"]))
    assert found == {"src/index.js"}  # a directory pattern matches at any depth
    found = await paths(service, workspace, "index", exclude_patterns=["*.js", "!src/*.js"])
    assert found == ["src/index.js"]


async def test_filters_combine_and_count(service, workspace):
    make_tree(workspace, ["src/a.py", "src/b.py", "src/c.txt", "build/d.py"])
    result = await search(
        service, workspace, "", extensions=[".py"], exclude_patterns=["build/"], max_results=1
    )
    assert (result.total_count, result.truncated, len(result.candidates)) == (2, True, 1)


# --- .gitignore, .git, symlinks ------------------------------------------------------------


async def test_gitignore_files_are_respected_at_every_level(service, workspace):
    make_tree(
        workspace,
        {
            ".gitignore": "*.log\nbuild/\n",
            "src/.gitignore": "secret.txt\n!keep.log\n",
            "src/app.py": "",
            "src/secret.txt": "",
            "src/keep.log": "",
            "src/debug.log": "",
            "debug.log": "",
            "build/out.py": "",
            "other/secret.txt": "",
        },
    )
    (workspace / ".git").mkdir()
    (workspace / ".git" / "config").write_text("")
    found = set(await paths(service, workspace, "", max_results=50))
    assert found == {
        ".gitignore",
        "src/.gitignore",
        "src/app.py",
        "src/keep.log",
        "other/secret.txt",
    }


async def test_git_info_exclude_counts_at_the_root(tmp_path):
    make_tree(tmp_path, {".git/info/exclude": "local.txt\n", "local.txt": "", "kept.txt": ""})
    service = FileSearchService([tmp_path], watch=False)
    try:
        assert set(await paths(service, tmp_path, "")) == {"kept.txt"}
    finally:
        await service.close()


async def test_gitignore_can_be_switched_off(tmp_path):
    make_tree(tmp_path, {".gitignore": "*.log\n", "a.log": "", ".git/HEAD": ""})
    service = FileSearchService([tmp_path], respect_gitignore=False, watch=False)
    try:
        assert set(await paths(service, tmp_path, "")) == {".gitignore", "a.log"}  # never .git
    finally:
        await service.close()


async def test_symlinks_leaving_the_root_are_not_indexed(tmp_path):
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    make_tree(outside, ["secret.txt", "dir/inner_secret.txt"])
    make_tree(root, ["real/target.txt"])
    os.symlink(outside / "secret.txt", root / "link_out.txt")
    os.symlink(outside / "dir", root / "dir_out")
    os.symlink(root / "real" / "target.txt", root / "link_in.txt")
    os.symlink(root / "real", root / "dir_in")
    os.symlink(root / "missing", root / "dangling.txt")
    service = FileSearchService([root], watch=False)
    try:
        found = set(await paths(service, root, "", max_results=50))
        assert found == {"real/target.txt", "link_in.txt"}
        assert await paths(service, root, "secret", scope="global") == []
    finally:
        await service.close()


async def test_names_that_are_not_utf8_are_skipped(service, workspace):
    make_tree(workspace, ["good_name.txt"])
    (workspace / os.fsdecode(b"dir\xff")).mkdir()
    for raw in (b"bad\xfe_name.txt", b"dir\xff/inside_name.txt"):
        (workspace / os.fsdecode(raw)).touch()
    assert await paths(service, workspace, "name") == ["good_name.txt"]


async def test_unparsable_pattern_lines_are_skipped_as_git_does(service, workspace):
    make_tree(workspace, {".gitignore": "!\n[z-a]\n*.log\ntrail\\\n", "a.log": "", "a.txt": ""})
    assert set(await paths(service, workspace, "a")) == {"a.txt"}
    found = await paths(service, workspace, "a", exclude_patterns=["[z-a]", "*.txt"])
    assert found == []


async def test_an_unwatched_tree_is_walked_again_only_when_the_clock_says_so(tmp_path):
    """Without a watcher, a search re-walks the tree at most every REWALK_INTERVAL_S by the
    injected clock: typing does not walk the disk per keystroke, yet new files show up."""
    from client.files.search.index import REWALK_INTERVAL_S, RootIndex
    from rawp.clock import FakeClock

    clock = FakeClock()
    (tmp_path / "old.py").write_text("x")
    index = RootIndex(str(tmp_path), respect_gitignore=True, watch=False, clock=clock)
    try:
        await index.settled()
        (tmp_path / "new.py").write_text("y")
        clock.advance(REWALK_INTERVAL_S - 1)
        await index.settled()
        assert sorted(index.paths()) == ["old.py"]
        clock.advance(2)
        await index.settled()
        assert sorted(index.paths()) == ["new.py", "old.py"]
    finally:
        await index.close()


async def test_a_build_whose_walk_child_was_killed_is_built_again_by_the_next_search(
    service, workspace
):
    """A first build whose walk child dies (killed here, as an OOM killer or a refused fork
    would end it) fails the search that waited for it, and the next search builds again —
    before, the failed build was kept and every later search of the root failed too."""
    import asyncio

    import psutil

    make_tree(workspace, {"src/auth.py": "x\n", "README.md": "# hi\n"})
    me = psutil.Process()

    async def kill_the_walk() -> int:
        while True:
            for child in me.children(recursive=True):
                with contextlib.suppress(psutil.Error):
                    if "client.files.search.walk_process" in child.cmdline():
                        child.kill()
                        return child.pid
            await asyncio.sleep(0.002)

    async with asyncio.TaskGroup() as group:  # a killer left running is cancelled with it
        killer = group.create_task(kill_the_walk())
        with pytest.raises(RuntimeError, match="could not be built"):
            await paths(service, workspace, "auth")
        assert killer.done() and killer.result() > 0  # the failure was the kill, not chance
    assert await paths(service, workspace, "auth") == ["src/auth.py"]
