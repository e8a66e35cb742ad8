"""`scope` (DPS §16.1.1, A-27): workspace, project, global — never outside the allowed roots."""

from __future__ import annotations

import pytest

from client.files.search import FileSearchService
from tests.client.test_files_helpers import make_tree, paths, search


@pytest.fixture
def trees(tmp_path):
    """root_a/repo (a git repository) with the workspace repo/app; root_b beside it."""
    root_a, root_b = tmp_path / "root_a", tmp_path / "root_b"
    make_tree(
        root_a,
        [
            "repo/.git/HEAD",
            "repo/app/main_widget.py",
            "repo/lib/widget_base.py",
            "elsewhere/widget_notes.md",
        ],
    )
    make_tree(root_b, ["tools/widget_tool.sh"])
    make_tree(tmp_path, ["outside/widget_secret.txt"])
    return root_a, root_b


@pytest.fixture
async def service(trees):
    service = FileSearchService(list(trees), watch=False)
    yield service
    await service.close()


async def test_workspace_scope_is_the_workspace(service, trees):
    root_a, _ = trees
    assert await paths(service, root_a / "repo/app", "widget") == ["main_widget.py"]


async def test_project_scope_is_the_enclosing_repository(service, trees):
    root_a, _ = trees
    found = await paths(service, root_a / "repo/app", "widget", scope="project")
    # inside the workspace: workspace-relative; outside it: relative with `..`
    assert sorted(found) == ["../lib/widget_base.py", "main_widget.py"]
    result = await search(service, root_a / "repo/app", "wbase", scope="project")
    [found] = result.candidates
    assert found.directory == "../lib"
    assert "".join(found.path[r.start : r.end] for r in found.match_ranges) == "wbase"


async def test_project_scope_without_a_repository_is_the_workspace(service, trees):
    root_a, _ = trees
    found = await paths(service, root_a / "elsewhere", "widget", scope="project")
    assert found == ["widget_notes.md"]


async def test_project_scope_stops_at_the_allowed_root(tmp_path):
    make_tree(tmp_path, ["repo/.git/HEAD", "repo/top_widget.py", "repo/allowed/ws/in_widget.py"])
    allowed = tmp_path / "repo" / "allowed"
    service = FileSearchService([allowed], watch=False)
    try:
        found = await paths(service, allowed / "ws", "widget", scope="project")
        assert found == ["in_widget.py"]  # the repository root lies above the allowed root
    finally:
        await service.close()


async def test_global_scope_is_every_allowed_root_and_nothing_else(service, trees):
    root_a, _ = trees
    found = await paths(service, root_a / "repo/app", "widget", scope="global")
    assert sorted(found) == [
        "../../../root_b/tools/widget_tool.sh",
        "../../elsewhere/widget_notes.md",
        "../lib/widget_base.py",
        "main_widget.py",
    ]


async def test_a_workspace_outside_every_allowed_root_finds_nothing(service, trees, tmp_path):
    for scope in ("workspace", "project", "global"):
        result = await search(service, tmp_path / "outside", "widget", scope=scope)
        assert (result.candidates, result.total_count, result.truncated) == ([], 0, False)


async def test_nested_allowed_roots_are_indexed_once(tmp_path):
    make_tree(tmp_path, ["a/b/one_widget.py"])
    service = FileSearchService([tmp_path, tmp_path / "a", tmp_path / "a" / "b"], watch=False)
    try:
        found = await paths(service, tmp_path / "a", "widget", scope="global")
        assert found == ["b/one_widget.py"]
    finally:
        await service.close()
