"""The stack of the resume tests (issue 30 §2): a real master and client whose agents file has
`keeper`, the fake ACP agent offering `session/load` (tests/agents/fake_acp.py): every answer
after a load starts with `[loaded: <the ACP session id it was given>]`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.client.test_worktrees import make_repository
from tests.edge.stack import start_stack
from tests.support import Processes

FAKE_ACP = Path(__file__).parents[1] / "agents" / "fake_acp.py"
ANSWER = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "noted"}}
TURN = {"updates": [ANSWER], "response": {"stopReason": "end_turn"}}


def resume_stack_fixture(owner: str, repository: bool = False):
    """`repository`: the gateway's workspace (`stack.root`) is a git repository, for worktrees."""

    @pytest.fixture
    def stack(tmp_path: Path):
        transcript = tmp_path / "keeper.json"
        transcript.write_text(json.dumps({"load_session": True, "turns": [TURN] * 4}))
        command = json.dumps([sys.executable, str(FAKE_ACP), str(transcript)])
        file = tmp_path / "agents.toml"
        file.write_text(f'[agents.keeper]\nkind = "acp"\ncommand = {command}\n')
        processes = Processes()
        made = None
        try:
            made = start_stack(processes, tmp_path / "stack", owner)
            if repository:
                make_repository(made.root)
            made.agents_file = file
            made.start_client("--agents-file", str(file))
            yield made
        finally:
            if made is not None:
                made.proxy.close()
            processes.close()

    return stack
