"""The stack of the worktree tests (issue 30 §3): a real master and client whose agents file
has the `writer` script agent (it writes the prompt's first word into the file its second word
names, in its workspace), and whose gateway workspace is a real git repository."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.client.test_worktrees import WRITER, make_repository
from tests.edge.stack import start_stack
from tests.support import Processes


def worktree_stack_fixture(owner: str):
    """A `stack` fixture for `owner`; `stack.root` (the gateway's workspace) is a repository."""

    @pytest.fixture
    def stack(tmp_path: Path):
        file = tmp_path / "agents.toml"
        command = json.dumps([sys.executable, "-c", WRITER])
        file.write_text(f'[agents.writer]\nkind = "script"\ncommand = {command}\n')
        processes = Processes()
        made = None
        try:
            made = start_stack(processes, tmp_path / "stack", owner)
            make_repository(made.root)
            made.start_client("--agents-file", str(file))
            yield made
        finally:
            if made is not None:
                made.proxy.close()
            processes.close()

    return stack


def worktree_of(repo: Path, session_id: str) -> Path:
    """Where the client makes a session's worktree (client.sessions.worktrees rule 1)."""
    return repo.parent / f"{repo.name}.worktrees" / session_id.replace("-", "")[:8]
