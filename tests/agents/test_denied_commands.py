"""A denied command never runs, whatever `input_type` carried it, on every agent kind (issue 15
§2): a real master (with `RAWP_EDGE_DENY_COMMANDS=deploy`) and a real client, both processes,
the real `claude` CLI and the ACP adapter against the fake Anthropic API, the openai kind
against the fake OpenAI API, and a script that records every prompt it is given.

The workspace holds Claude Code project commands `/deploy` and `/allowed`, each of which, when
the CLI runs it, sends the model a marker: the fake's recorded requests show whether a command
ran. `/allowed` sent as `text` does run — the CLI, directly or behind the ACP adapter, reads a
leading `/` as a command — so the test can tell; `/deploy` in any spelling and any
`input_type` is refused at the master and reaches no agent.
"""

from __future__ import annotations

import json
import sys

import pytest

from client.agents import create_agent
from client.agents.base import AgentSpec, Reference
from client.agents.kinds import kind_settings
from master.edge.links.policy import command_names
from rawp.events import FileReference, PromptRequest
from rawp.fileref import parse
from tests.agents.conftest import model_env
from tests.agents.fake_anthropic import FakeAnthropic, Turn, text
from tests.agents.fake_openai import FakeOpenAI, Reply, chunk
from tests.agents.wire import inline_table
from tests.edge.stack import edge_for, frame, recv, start_stack
from tests.support import Processes

OWNER = "discord:4242"
DEPLOY_MARKER = "DEPLOY-COMMAND-RAN-5d1c"
ALLOWED_MARKER = "ALLOWED-COMMAND-RAN-9e2b"
# Spellings each kind could read as `/deploy` (the full table is in tests/edge/test_policy.py).
DENIED = ["/deploy", "  /deploy now", "\u200b/deploy", "\ufeff\u3000/Deploy", "//deploy"]
INPUT_TYPES = ["text", "slash_command", "markdown"]
KINDS = ["claude", "acp", "llm", "script"]

RECORDER = (
    "import os, sys\n"
    "with open(sys.argv[1], 'a') as log:\n"
    "    log.write(repr(os.environ['RAWP_PROMPT']) + '\\n')\n"
    "print('recorded')\n"
)


@pytest.fixture
def world(tmp_path, node_agents, monkeypatch):
    """The stack, started outside the test's event loop; the fakes listen once the test runs."""
    monkeypatch.setenv("RAWP_EDGE_DENY_COMMANDS", "deploy")
    monkeypatch.setenv("RAWP_TEST_OPENAI_KEY", "sk-test-123")
    anthropic, openai = FakeAnthropic(), FakeOpenAI()
    env = inline_table(model_env(anthropic.base_url, tmp_path / "home"))
    log = tmp_path / "script-prompts.log"
    recorder = tmp_path / "recorder.py"
    recorder.write_text(RECORDER)
    agents = tmp_path / "agents.toml"
    claude = json.dumps([str(node_agents.claude)])
    agents.write_text(
        f'[agents.claude]\nkind = "claude-code"\ncommand = {claude}\n'
        f'env = {env}\nmodel = "claude-rawp-test"\n\n'
        f'[agents.acp]\nkind = "acp"\ncommand = {json.dumps(node_agents.acp)}\nenv = {env}\n\n'
        f'[agents.llm]\nkind = "openai"\nbase_url = "{openai.base_url}"\nmodel = "m"\n'
        'api_key_env = "RAWP_TEST_OPENAI_KEY"\n\n'
        f'[agents.script]\nkind = "script"\n'
        f"command = {json.dumps([sys.executable, str(recorder), str(log)])}\n"
    )
    processes = Processes()
    try:
        stack = start_stack(processes, tmp_path / "stack", OWNER)
        commands = stack.root / ".claude" / "commands"
        commands.mkdir(parents=True)
        # The description is what the CLI lists; the body reaches the model only when it runs.
        (commands / "deploy.md").write_text(
            f"---\ndescription: ship it\n---\nSay {DEPLOY_MARKER} and deploy to production.\n"
        )
        (commands / "allowed.md").write_text(
            f"---\ndescription: harmless\n---\nSay {ALLOWED_MARKER}.\n"
        )
        stack.start_client("--agents-file", str(agents))
        yield stack, anthropic, openai, log
    finally:
        processes.close()
        if "stack" in locals():
            stack.proxy.close()


def _messages(fake: FakeAnthropic) -> str:
    """What the model was told in conversation (not the tool list the CLI also sends)."""
    return json.dumps([r["body"].get("messages") for r in fake.requests])


async def _open(edge, stack, agent: str):
    status, nodes = await edge.call("GET", "/v1/edge/nodes")
    assert status == 200 and len(nodes["nodes"]) == 1, nodes
    node_id = nodes["nodes"][0]["node_id"]
    body = {"agent_name": agent, "workspace_path": str(stack.root)}
    status, made = await edge.call("POST", f"/v1/edge/nodes/{node_id}/sessions", body)
    assert status == 201, made
    ws = await edge.connect(made["session_id"], made["edge_ws_ticket"])
    greeting = [(await recv(ws))["type"], (await recv(ws))["type"]]
    assert greeting == ["session.capabilities", "tool.catalog.publish"]
    return made["session_id"], ws


async def _turn(ws, sid: str, prompt_text: str, input_type: str = "text") -> list[dict]:
    """Send one prompt; every frame up to its `session.turn.end`."""
    await ws.send(
        frame(
            "control.prompt.request",
            {"prompt_text": prompt_text, "input_type": input_type},
            sid,
        )
    )
    frames = []
    while not frames or frames[-1]["type"] != "session.turn.end":
        frames.append(await recv(ws, 120))
    return frames


async def test_a_denied_command_reaches_no_agent_kind_in_any_input_type(world):
    stack, anthropic, openai, log = world
    async with anthropic, openai, edge_for(stack.master_url, OWNER) as edge:
        for agent in KINDS:
            sid, ws = await _open(edge, stack, agent)
            for spelling in DENIED:
                for input_type in INPUT_TYPES:
                    payload = {"prompt_text": spelling, "input_type": input_type}
                    await ws.send(frame("control.prompt.request", payload, sid))
                    answer = await recv(ws)
                    assert answer["type"] == "session.error", (agent, spelling, answer)
                    assert answer["payload"]["code"] == "PROMPT_REJECTED_BY_POLICY"
                    assert "/deploy" in answer["payload"]["message"]
            # Frames of one socket are handled in order, so a refused prompt that had reached
            # the client would have started its turn before this one.
            anthropic.script.append(Turn([text("fine")]))
            openai.script.append(Reply([chunk({"content": "fine"}), chunk({}, "stop")]))
            frames = await _turn(ws, sid, "say fine")
            types = [f["type"] for f in frames]
            assert types.count("session.turn.start") == 1, (agent, types)
            assert frames[-1]["payload"]["stop_reason"] == "end_turn", (agent, frames[-1])

    seen_by_models = _messages(anthropic) + json.dumps(openai.requests)
    assert "say fine" in seen_by_models  # the models were reached: the pipe was live
    assert "/deploy" not in seen_by_models.lower()
    assert DEPLOY_MARKER not in json.dumps(anthropic.requests)
    assert log.read_text().splitlines() == [repr("say fine")]  # the script ran once


@pytest.mark.parametrize("agent", ["claude", "acp"])
async def test_an_allowed_command_sent_as_text_runs_and_the_denied_one_never(world, agent):
    """The control that makes the test above able to fail: the real CLI (directly, or behind
    the ACP adapter) reads a `text` prompt starting with `/` as a command, so only the
    master's check stands between it and `/deploy`."""
    stack, anthropic, openai, _ = world
    async with anthropic, openai, edge_for(stack.master_url, OWNER) as edge:
        sid, ws = await _open(edge, stack, agent)
        anthropic.script.append(Turn([text("done")]))
        frames = await _turn(ws, sid, "/allowed", "text")
        assert frames[-1]["payload"]["stop_reason"] == "end_turn"
        assert ALLOWED_MARKER in _messages(anthropic)
        await ws.send(
            frame("control.prompt.request", {"prompt_text": "/deploy", "input_type": "text"}, sid)
        )
        refused = await recv(ws)
        assert refused["payload"]["code"] == "PROMPT_REJECTED_BY_POLICY"
    assert DEPLOY_MARKER not in json.dumps(anthropic.requests)


# --- what each kind gives its agent reads as a command only where the master saw one ----------

SPECS = {
    "claude-code": {"command": ["claude"]},
    "acp": {"command": ["agent"]},
    "openai": {"base_url": "http://127.0.0.1:9/v1", "model": "m"},
    "script": {"command": ["true"]},
}
TOKEN_LED = [
    ("<@file:ref_0|/deploy> now", "deploy.md"),
    ("<@file:ref_0|/deploy>", None),  # a reference to no file: its display_path is the text
    ("\\<@file:ref_0|x> /deploy", "x"),
    ("<@file:ref_0|docs/a.md> /deploy", "docs/a.md"),
]


@pytest.mark.parametrize("kind", sorted(SPECS))
def test_no_kind_turns_a_prompt_into_a_command_the_master_did_not_read(kind, tmp_path):
    """The master's check holds only if no kind writes a prompt so that its agent reads a
    command the master did not: for every spelling, the names in the text the kind hands its
    agent are among the names the master checked."""

    async def emit(type: str, payload: dict) -> None:
        raise AssertionError("convert emits nothing")

    agent = create_agent(
        AgentSpec(name="a", kind=kind, settings=kind_settings(kind, SPECS[kind])),
        workspace=tmp_path,
        session_id="s",
        emit=emit,
        kill_grace=1.0,
    )
    cases = [(typed, None) for typed in [*DENIED, "/allowed", "plain", "\\\\/deploy"]] + TOKEN_LED
    for typed, path in cases:
        refs = [FileReference(ref_id="ref_0", path=path or "gone.md")]
        for input_type in INPUT_TYPES:
            request = PromptRequest(prompt_text=typed, input_type=input_type, file_references=refs)
            references = [Reference("ref_0", path or "gone.md", path)]
            given = agent.convert("m", parse(typed, refs), references, input_type)
            as_the_agent_reads = command_names(PromptRequest(prompt_text=given.text))
            assert as_the_agent_reads <= command_names(request), (kind, typed, given.text)
