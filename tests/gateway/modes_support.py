"""The stack of the mode tests (issue 30 §1): a real master and client whose agents file
runs the real `claude` CLI (tests/agents/node) against a fake Anthropic API, beside the demo
agent (which has no modes). The fake model's port is chosen now; the test serves it
(`async with model`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.agents.conftest import NodeAgents, model_env
from tests.agents.fake_anthropic import FakeAnthropic
from tests.agents.wire import inline_table
from tests.edge.stack import start_stack
from tests.support import Processes


def claude_stack_fixture(owner: str):
    """A `stack_and_model` fixture for `owner`: (the stack, the fake model, not serving yet)."""

    @pytest.fixture
    def stack_and_model(tmp_path: Path, node_agents: NodeAgents):
        model = FakeAnthropic()
        env = model_env(model.base_url, tmp_path / "home")
        file = tmp_path / "agents.toml"
        file.write_text(
            '[agents.claude]\nkind = "claude-code"\n'
            f"command = [{json.dumps(str(node_agents.claude))}]\nenv = {inline_table(env)}\n"
            'model = "claude-rawp-test"\n'
            '[agents.demo]\nkind = "script"\nmode = "jsonl"\n'
            f'command = [{json.dumps(sys.executable)}, "-m", "rawp_app.cli", "demo-agent"]\n'
        )
        processes = Processes()
        stack = None
        try:
            stack = start_stack(processes, tmp_path / "stack", owner)
            stack.claude = node_agents.claude  # to run it "from the terminal" (issue 30 §2)
            stack.start_client("--agents-file", str(file))
            yield stack, model
        finally:
            if stack is not None:
                stack.proxy.close()
            processes.close()

    return stack_and_model


def plan_mode_reached(model: FakeAnthropic) -> bool:
    """The CLI ran the last turn in plan mode: its system reminder says so."""
    return "plan mode" in json.dumps(model.main_requests()[-1]).lower()
