"""A session's git worktree through the Edge API (issue 30 §3, master/edge/sessions/worktrees.py):
the real master and client processes, a real repository, owner-only diff/merge/discard."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.client.test_worktrees import make_repository, rawp_branches, sh
from tests.edge.conftest import OWNER
from tests.edge.stack import edge_for


async def _create(edge, workspace: Path, **extra) -> tuple[int, dict]:
    status, nodes = await edge.call("GET", "/v1/edge/nodes")
    assert status == 200, nodes
    node_id = nodes["nodes"][0]["node_id"]
    body = {"agent_name": "demo", "workspace_path": str(workspace), **extra}
    return await edge.call("POST", f"/v1/edge/nodes/{node_id}/sessions", body)


def _worktree(repo: Path, session_id: str) -> Path:
    return repo.parent / f"{repo.name}.worktrees" / session_id.replace("-", "")[:8]


async def test_the_owner_diffs_and_merges_a_sessions_worktree(stack):
    repo = await asyncio.to_thread(make_repository, stack.root.parent / "repo-merge")
    async with (
        edge_for(stack.master_url, OWNER) as edge,
        edge_for(stack.master_url, "discord:2002") as stranger,
    ):
        status, made = await _create(edge, repo, worktree=True)
        assert status == 201, made
        sid = made["session_id"]
        where = _worktree(repo, sid)
        assert sh(where, "branch", "--show-current") == "rawp/" + sid.replace("-", "")[:8]
        (where / "shared.txt").write_text("from the session\n")  # what an agent would do
        path = f"/v1/edge/sessions/{sid}/worktree"
        status, refused = await stranger.call("POST", path, {"action": "diff"})
        assert (status, refused["error_code"]) == (404, "SESSION_NOT_FOUND")
        status, refused = await edge.call("POST", path, {"action": "squash"})
        assert (status, refused["error_code"]) == (400, "INVALID_REQUEST")
        status, diff = await edge.call("POST", path, {"action": "diff"})
        assert status == 200 and "+from the session" in diff["diff"], diff
        assert (repo / "shared.txt").read_text() == "base\n"
        status, refused = await stranger.call("POST", path, {"action": "merge"})
        assert status == 404 and (repo / "shared.txt").read_text() == "base\n"
        status, merged = await edge.call("POST", path, {"action": "merge"})
        assert (status, merged["into"]) == (200, "main"), merged
        assert (repo / "shared.txt").read_text() == "from the session\n"
        assert rawp_branches(repo) == ""
        # Merging ended the session: it is no longer listed.
        status, listed = await edge.call("GET", "/v1/edge/sessions")
        assert sid not in [s["session_id"] for s in listed["sessions"]]
        status, gone = await edge.call("POST", path, {"action": "diff"})
        assert (status, gone["error_code"]) == (404, "NO_WORKTREE")


async def test_discard_and_a_workspace_that_is_no_repository(stack):
    repo = await asyncio.to_thread(make_repository, stack.root.parent / "repo-discard")
    async with edge_for(stack.master_url, OWNER) as edge:
        status, refused = await _create(edge, stack.root, worktree=True)
        assert (status, refused["error_code"]) == (400, "NOT_A_GIT_REPOSITORY"), refused
        assert "not inside a git repository" in refused["message"]
        status, made = await _create(edge, repo, worktree=True)
        assert status == 201, made
        where = _worktree(repo, made["session_id"])
        (where / "scratch.txt").write_text("throw away\n")
        path = f"/v1/edge/sessions/{made['session_id']}/worktree"
        status, gone = await edge.call("POST", path, {"action": "discard"})
        assert (status, gone["discarded"]) == (200, True), gone
        assert not await asyncio.to_thread(where.exists)
        assert rawp_branches(repo) == "" and not (repo / "scratch.txt").exists()


async def test_the_worktree_outlives_a_client_restart(stack):
    """Restart safety: the client's state keeps the record, the master the owner."""
    repo = await asyncio.to_thread(make_repository, stack.root.parent / "repo-restart")
    async with edge_for(stack.master_url, OWNER) as edge:
        status, made = await _create(edge, repo, worktree=True)
        assert status == 201, made
        sid = made["session_id"]
        (_worktree(repo, sid) / "kept.txt").write_text("kept across a restart\n")
        await asyncio.to_thread(stack.stop_client)
        await asyncio.to_thread(stack.start_client)
        path = f"/v1/edge/sessions/{sid}/worktree"
        status, diff = await edge.call("POST", path, {"action": "diff"})
        assert status == 200 and "+kept across a restart" in diff["diff"], diff
        status, merged = await edge.call("POST", path, {"action": "merge"})
        assert (status, merged["into"]) == (200, "main"), merged
        assert (repo / "kept.txt").read_text() == "kept across a restart\n"


async def test_two_merges_at_once_merge_once_and_the_other_hears_why(stack):
    """A double click on Merge: both calls find the session running and end it (rule 2); the one
    that comes second must not find its session "not found" because the first ended it."""
    repo = await asyncio.to_thread(make_repository, stack.root.parent / "repo-twice")
    async with edge_for(stack.master_url, OWNER) as edge:
        status, made = await _create(edge, repo, worktree=True)
        assert status == 201, made
        (_worktree(repo, made["session_id"]) / "once.txt").write_text("merged once\n")
        path = f"/v1/edge/sessions/{made['session_id']}/worktree"
        answers = await asyncio.gather(
            edge.call("POST", path, {"action": "merge"}),
            edge.call("POST", path, {"action": "merge"}),
        )
    merged = [body for status, body in answers if status == 200]
    refused = [(status, body.get("error_code")) for status, body in answers if status != 200]
    assert [body["into"] for body in merged] == ["main"], answers
    assert refused == [(404, "NO_WORKTREE")], answers  # the worktree was merged and removed
    assert (repo / "once.txt").read_text() == "merged once\n"
