"""The index follows the disk through the real watcher (a child process running watchfiles),
and an in-flight search can be cancelled (A-30). Waits poll with a deadline, never a fixed sleep."""

from __future__ import annotations

import asyncio
import os
import shutil

import psutil
import pytest

from client.files.search import FileSearchService
from tests.client.test_files_helpers import eventually, make_tree, paths, search


@pytest.fixture
async def service(tmp_path):
    service = FileSearchService([tmp_path])
    yield service
    await service.close()


@pytest.fixture
def workspace(tmp_path):
    ws = tmp_path / "ws"
    make_tree(ws, ["src/existing_module.py"])
    return ws


def appears(service, workspace, query, path):
    async def check():
        return path in await paths(service, workspace, query, max_results=50)

    return check


def disappears(service, workspace, query, path):
    async def check():
        return path not in await paths(service, workspace, query, max_results=50)

    return check


async def test_created_file_appears(service, workspace):
    assert await paths(service, workspace, "fresh") == []
    (workspace / "src" / "fresh_file.py").write_text("x")
    await eventually(appears(service, workspace, "fresh", "src/fresh_file.py"), "new file")


async def test_deleted_file_disappears(service, workspace):
    assert await paths(service, workspace, "existing") == ["src/existing_module.py"]
    (workspace / "src" / "existing_module.py").unlink()
    await eventually(
        disappears(service, workspace, "existing", "src/existing_module.py"), "deleted file"
    )
    result = await search(service, workspace, "existing")
    assert (result.total_count, result.truncated) == (0, False)


async def test_renamed_file_moves(service, workspace):
    assert await paths(service, workspace, "existing") == ["src/existing_module.py"]
    os.rename(workspace / "src" / "existing_module.py", workspace / "src" / "renamed_module.py")
    await eventually(appears(service, workspace, "module", "src/renamed_module.py"), "new name")
    await eventually(
        disappears(service, workspace, "module", "src/existing_module.py"), "old name gone"
    )


async def test_directory_moved_in_and_removed(service, workspace, tmp_path):
    assert await paths(service, workspace, "") == ["src/existing_module.py"]
    make_tree(tmp_path / "staging", ["pkg/deep/moved_in_a.py", "pkg/moved_in_b.py"])
    shutil.move(tmp_path / "staging" / "pkg", workspace / "pkg")
    await eventually(appears(service, workspace, "moved", "pkg/deep/moved_in_a.py"), "moved dir")
    await eventually(appears(service, workspace, "moved", "pkg/moved_in_b.py"), "moved dir")
    shutil.rmtree(workspace / "pkg")

    async def none_left():
        return await paths(service, workspace, "moved") == []

    await eventually(none_left, "removed directory's files gone")


async def test_modified_file_reports_its_new_size(service, workspace):
    [found] = (await search(service, workspace, "existing")).candidates
    assert found.size_bytes == 0
    (workspace / "src" / "existing_module.py").write_text("twelve bytes")

    async def grown():
        [found] = (await search(service, workspace, "existing")).candidates
        return found.size_bytes == 12

    await eventually(grown, "size updated")


async def test_editing_gitignore_hides_and_shows_files(service, workspace):
    make_tree(workspace, ["logs/run.log"])
    await eventually(appears(service, workspace, "run", "logs/run.log"), "log file")
    (workspace / ".gitignore").write_text("*.log\n")
    await eventually(disappears(service, workspace, "run", "logs/run.log"), "ignored now")
    (workspace / ".gitignore").write_text("")
    await eventually(appears(service, workspace, "run", "logs/run.log"), "visible again")


async def test_new_file_in_ignored_directory_stays_out(service, workspace):
    (workspace / ".gitignore").write_text("build/\n")
    await eventually(appears(service, workspace, "gitignore", ".gitignore"), "gitignore seen")
    make_tree(workspace, ["build/artifact_out.py", "src/artifact_src.py"])
    await eventually(appears(service, workspace, "artifact", "src/artifact_src.py"), "src file")
    assert await paths(service, workspace, "artifact") == ["src/artifact_src.py"]


async def test_close_stops_the_watcher_process(tmp_path):
    make_tree(tmp_path, ["a.txt"])
    service = FileSearchService([tmp_path])
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    await paths(service, tmp_path, "a")
    started = {p.pid for p in psutil.Process().children(recursive=True)} - before
    assert started, "a watcher child process runs while the service is open"
    await service.close()
    still = {p.pid for p in psutil.Process().children(recursive=True)} & started
    assert still == set()


# --- cancellation (A-30) ----------------------------------------------------------------------


async def test_cancelled_search_returns_nothing_and_the_next_one_works(tmp_path):
    make_tree(tmp_path, [f"d{i % 40}/file_{i}.txt" for i in range(4000)])
    service = FileSearchService([tmp_path])
    try:
        # The first search must walk the tree and build a view: cancel it in flight.
        task = asyncio.create_task(search(service, tmp_path, "file", exclude_patterns=["d1*/"]))
        for _ in range(5):
            await asyncio.sleep(0)
        assert not task.done()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        result = await search(service, tmp_path, "file", exclude_patterns=["d1*/"])
        assert result.total_count == 4000 - 11 * 100  # d1 and d10..d19 excluded
    finally:
        await service.close()


async def test_cancelling_one_search_leaves_the_others(tmp_path):
    make_tree(tmp_path, [f"pkg/mod_{i}.py" for i in range(300)])
    service = FileSearchService([tmp_path], watch=False)
    try:
        await paths(service, tmp_path, "")  # built
        tasks = [asyncio.create_task(search(service, tmp_path, f"mod_{i}")) for i in range(10)]
        tasks[3].cancel()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        assert isinstance(results[3], asyncio.CancelledError)
        for i, result in enumerate(results):
            if i != 3:
                assert result.candidates[0].path == f"pkg/mod_{i}.py"
    finally:
        await service.close()


async def test_filtered_view_follows_changes(service, workspace):
    assert await paths(service, workspace, "", extensions=[".py"]) == ["src/existing_module.py"]
    make_tree(workspace, ["src/later.py", "src/later.txt"])

    async def only_python():
        found = await paths(service, workspace, "later", extensions=[".py"])
        return found == ["src/later.py"]

    await eventually(only_python, "new .py file in the filtered view, .txt kept out")
    await eventually(appears(service, workspace, "later", "src/later.txt"), "unfiltered view")


async def test_mass_deletion_keeps_counts_exact(service, workspace):
    make_tree(workspace, [f"bulk/item_{i:04}.dat" for i in range(1500)])

    async def count_is(expected):
        async def check():
            return (await search(service, workspace, "item")).total_count == expected

        return check

    await eventually(await count_is(1500), "1500 files indexed")
    for i in range(1200):  # past the tombstone limit: the view compacts itself
        (workspace / "bulk" / f"item_{i:04}.dat").unlink()
    await eventually(await count_is(300), "1200 deletions seen")
    result = await search(service, workspace, "item", max_results=50)
    assert all(c.path >= "bulk/item_1200.dat" for c in result.candidates)
    assert result.truncated is True


async def test_directory_swapped_for_an_escaping_symlink(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    make_tree(root, ["ws/data/inner_file.txt"])
    make_tree(outside, ["escaped_file.txt"])
    service = FileSearchService([root])
    try:
        workspace = root / "ws"
        assert await paths(service, workspace, "file") == ["data/inner_file.txt"]
        shutil.rmtree(workspace / "data")
        os.symlink(outside, workspace / "data")
        await eventually(
            disappears(service, workspace, "file", "data/inner_file.txt"), "old directory gone"
        )
        make_tree(workspace, ["marker_file.txt"])  # a later change proves the watcher caught up
        await eventually(appears(service, workspace, "marker", "marker_file.txt"), "marker")
        assert await paths(service, workspace, "file") == ["marker_file.txt"]
    finally:
        await service.close()
