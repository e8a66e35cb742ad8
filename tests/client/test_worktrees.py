"""A git worktree per session (issue 30 §3, client/sessions/worktrees.py): real `git`, real
repositories in tmp_path, the real client with a script agent that writes into its workspace."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from client.sessions.worktrees import Worktrees
from tests.agents.wire import turn, write_agents_file
from tests.client.harness import recv, running_client

# The agent writes the prompt's first word into the file named by its second word.
WRITER = (
    "import os; text = os.environ['RAWP_PROMPT'].split(); "
    "open(text[1], 'w').write(text[0] + '\\n'); print('wrote', text[1])"
)


def sh(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def rawp_branches(repo: Path) -> str:
    return sh(repo, "branch", "--list", "--format=%(refname:short)", "rawp/*")


def make_repository(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    sh(path, "init", "-q", "-b", "main")
    sh(path, "config", "user.email", "dev@example.com")
    sh(path, "config", "user.name", "dev")
    (path / "shared.txt").write_text("base\n")
    sh(path, "add", "-A")
    sh(path, "commit", "-q", "-m", "base")
    return path


def agents(tmp_path: Path, worktree_setting: bool = False) -> Path:
    command = json.dumps([sys.executable, "-c", WRITER])
    extra = "worktree = true\n" if worktree_setting else ""
    return write_agents_file(
        tmp_path,
        f'[agents.writer]\nkind = "script"\ncommand = {command}\n{extra}'
        f'[agents.plain]\nkind = "script"\ncommand = {command}\n',
    )


async def open_in_worktree(client, agent: str = "writer", **extra) -> tuple[str, object, dict]:
    made = await client.init(agent=agent, **extra)
    assert made["status"] == 201, made
    ws = await client.connect(made["session_id"], made["ticket"])
    await recv(ws), await recv(ws)  # capabilities, catalog
    return made["session_id"], ws, made["body"]


async def action(client, sid: str, what: str) -> tuple[int, dict]:
    return await client.request("POST", f"/v1/session/{sid}/worktree", {"action": what})


async def test_two_sessions_on_one_repository_never_touch_each_others_files(tmp_path):
    async with running_client(tmp_path, agents_file=agents(tmp_path)) as client:
        repo = make_repository(client.workspace)
        one, ws_one, body_one = await open_in_worktree(client, worktree=True)
        two, ws_two, body_two = await open_in_worktree(client, worktree=True)
        where_one, where_two = Path(body_one["workspace_path"]), Path(body_two["workspace_path"])
        assert where_one != where_two and repo not in (where_one, where_two)
        assert where_one.parent == repo.parent / "ws.worktrees"
        assert sh(where_one, "branch", "--show-current") == "rawp/" + one.replace("-", "")[:8]
        await turn(ws_one, one, "first shared.txt")
        await turn(ws_two, two, "second shared.txt")
        assert (where_one / "shared.txt").read_text() == "first\n"
        assert (where_two / "shared.txt").read_text() == "second\n"
        assert (repo / "shared.txt").read_text() == "base\n"  # the workspace itself untouched

        status, diff = await action(client, one, "diff")
        assert status == 200 and "+first" in diff["diff"] and "second" not in diff["diff"]
        # Merging the first into main; the second now conflicts and is refused, nothing half-done.
        status, merged = await action(client, one, "merge")
        assert (status, merged["into"]) == (200, "main"), merged
        assert (repo / "shared.txt").read_text() == "first\n"
        assert not await asyncio.to_thread(where_one.exists)
        assert rawp_branches(repo) == "rawp/" + two.replace("-", "")[:8]
        assert client.services.sessions.count == 1  # merging ended the first session
        status, refused = await action(client, two, "merge")
        assert (status, refused["error_code"]) == (409, "MERGE_CONFLICT"), refused
        assert sh(repo, "status", "--porcelain") == ""  # merge --abort left nothing behind
        assert (repo / "shared.txt").read_text() == "first\n"
        status, gone = await action(client, two, "discard")
        assert status == 200 and gone["discarded"] is True
        assert not await asyncio.to_thread(where_two.exists)
        assert rawp_branches(repo) == ""
        status, none = await action(client, two, "diff")
        assert (status, none["error_code"]) == (404, "NO_WORKTREE")


async def test_a_new_file_shows_in_the_diff_and_is_merged(tmp_path):
    async with running_client(tmp_path, agents_file=agents(tmp_path)) as client:
        repo = make_repository(client.workspace)
        sid, ws, _ = await open_in_worktree(client, worktree=True)
        await turn(ws, sid, "hello new.txt")
        status, diff = await action(client, sid, "diff")
        assert status == 200 and "new.txt" in diff["diff"] and "+hello" in diff["diff"]
        assert not (repo / "new.txt").exists()
        status, _ = await action(client, sid, "merge")
        assert status == 200
        assert (repo / "new.txt").read_text() == "hello\n"
        assert sh(repo, "branch", "--show-current") == "main"


async def test_the_agents_worktree_setting_needs_no_request_field(tmp_path):
    async with running_client(tmp_path, agents_file=agents(tmp_path, True)) as client:
        repo = make_repository(client.workspace)
        _, _, body = await open_in_worktree(client)
        assert Path(body["workspace_path"]) != repo
        _, _, plain = await open_in_worktree(client, agent="plain")
        assert Path(plain["workspace_path"]) == repo  # without either, the workspace itself


async def test_a_workspace_that_is_no_repository_is_refused_clearly(tmp_path):
    async with running_client(tmp_path, agents_file=agents(tmp_path)) as client:
        made = await client.init(agent="writer", worktree=True)
        assert made["status"] == 400
        assert made["body"]["error_code"] == "NOT_A_GIT_REPOSITORY"
        assert "not inside a git repository" in made["body"]["message"]
        assert client.services.sessions.count == 0
        status, refused = await action(client, made["session_id"], "rebase")
        assert (status, refused["error_code"]) == (400, "INVALID_REQUEST")


async def test_the_worktree_survives_a_client_restart(tmp_path):
    path = agents(tmp_path)
    async with running_client(tmp_path, agents_file=path) as client:
        repo = make_repository(client.workspace)
        sid, ws, _ = await open_in_worktree(client, worktree=True)
        await turn(ws, sid, "kept shared.txt")
    # A new client on the same state directory: the session is gone, its worktree is not.
    async with running_client(tmp_path, agents_file=path) as client:
        assert client.services.sessions.count == 0
        status, diff = await action(client, sid, "diff")
        assert status == 200 and "+kept" in diff["diff"]
        status, _ = await action(client, sid, "merge")
        assert status == 200 and (repo / "shared.txt").read_text() == "kept\n"
    assert Worktrees(tmp_path / "state", client.services.guard).records == {}


async def test_a_repository_that_is_an_allowed_root_gets_no_worktree_outside_it(tmp_path):
    async with running_client(tmp_path, agents_file=agents(tmp_path)) as client:
        root = client.workspace.parent  # the allowed root itself is the repository
        make_repository(root)
        made = await client.init(agent="writer", worktree=True)
        assert made["status"] == 403, made
        assert made["body"]["error_code"] == "WORKTREE_OUTSIDE_ROOTS"
        assert "allow the repository's parent directory" in made["body"]["message"]
        assert not (root.parent / "root.worktrees").exists()
        assert client.services.sessions.count == 0
