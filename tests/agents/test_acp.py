"""The `acp` kind end to end: WebSocket → the kind → the real Claude Code ACP adapter
(`@zed-industries/claude-code-acp`, over stdio) → a fake Anthropic API playing the model."""

from __future__ import annotations

import asyncio
import json

import pytest

from client.agents import AgentsFileError, load_agents
from tests.agents.conftest import model_env
from tests.agents.fake_anthropic import FakeAnthropic, Turn, text, thinking, tool_use
from tests.agents.wire import (
    drive,
    inline_table,
    kill_agent,
    kinds,
    of,
    open_session,
    send_prompt,
    stop_reason,
    write_agents_file,
)
from tests.client.harness import frame, recv_until, running_client


@pytest.fixture
async def live(tmp_path, node_agents):
    async with FakeAnthropic() as fake:
        env = model_env(fake.base_url, tmp_path / "home")
        path = write_agents_file(
            tmp_path,
            '[agents.acp]\nkind = "acp"\n'
            f"command = {json.dumps(node_agents.acp)}\nenv = {inline_table(env)}\n",
        )
        async with running_client(tmp_path, agents_file=path) as client:
            yield client, fake


async def test_plain_answer_with_thinking_and_commands(live):
    client, fake = live
    fake.script.append(Turn([thinking("Greeting."), text("Hello from ACP")]))
    sid, ws = await open_session(client, "acp")
    frames = await drive(ws, sid, "hi")
    sequence = kinds(frames, drop_deltas=True)
    assert sequence[0] == "session.turn.start" and sequence[-1] == "session.turn.end"
    assert sequence.index("agent.thinking.done") < sequence.index("agent.text.done")
    assert "".join(p["text"] for p in of(frames, "agent.thinking.delta")) == "Greeting."
    done = of(frames, "agent.text.done")
    assert done[-1]["text"] == "Hello from ACP"
    assert done[-1]["content_index"] > of(frames, "agent.thinking.done")[0]["content_index"]
    assert stop_reason(frames) == "end_turn"
    assert of(frames, "session.usage")
    assert "hi" in json.dumps(fake.main_requests()[0]["messages"][-1])


async def test_read_and_edit_through_the_adapter(live):
    client, fake = live
    target = client.workspace / "app.py"
    target.write_text("def greet():\n    return 'hi'\n")
    fake.script.append(Turn([tool_use("mcp__acp__Read", {"file_path": str(target)})]))
    fake.script.append(
        Turn(
            [
                tool_use(
                    "mcp__acp__Edit",
                    {"file_path": str(target), "old_string": "'hi'", "new_string": "'hello'"},
                )
            ]
        )
    )
    fake.script.append(Turn([text("Changed.")]))
    sid, ws = await open_session(client, "acp")
    refs = [{"ref_id": "ref_0", "path": "app.py", "display_path": "app.py"}]
    frames = await drive(ws, sid, "make <@file:ref_0|app.py> say hello", ["allow_once"], refs=refs)
    results = of(frames, "tool.invoke.result")
    kinds_by_type = [r["output_type"] for r in results]
    assert "file_content" in kinds_by_type and "diff" in kinds_by_type
    read = next(r for r in results if r["output_type"] == "file_content")
    assert read["tool_name"] == "Read"
    assert read["output"] == {"path": "app.py", "content": "def greet():\n    return 'hi'\n"}
    diff = next(r for r in results if r["output_type"] == "diff")["output"]
    assert diff.startswith("--- a/app.py\n+++ b/app.py\n")
    assert "-    return 'hi'" in diff and "+    return 'hello'" in diff
    assert target.read_text() == "def greet():\n    return 'hello'\n"
    # The file reference went to the agent as a resource_link, which it passed on.
    assert "app.py" in json.dumps(fake.main_requests()[0]["messages"])


async def test_bash_approval_allowed_once_denied_once(live):
    client, fake = live
    fake.script.append(
        Turn([tool_use("Bash", {"command": "touch allowed.txt", "description": "a"})])
    )
    fake.script.append(
        Turn([tool_use("Bash", {"command": "touch denied.txt", "description": "b"})])
    )
    fake.script.append(Turn([text("Done.")]))
    sid, ws = await open_session(client, "acp")
    frames = await drive(ws, sid, "make two files", ["allow_once", "reject"])
    asks = of(frames, "agent.interaction.request")
    assert len(asks) == 2 and "touch allowed.txt" in json.dumps(asks[0])
    assert (client.workspace / "allowed.txt").exists()
    assert not (client.workspace / "denied.txt").exists()
    assert stop_reason(frames) == "end_turn"


async def test_cancel_mid_turn_then_the_session_goes_on(live):
    client, fake = live
    hold = asyncio.Event()
    fake.script.append(Turn([text("A long story begins"), text("and never ends")], hold=hold))
    sid, ws = await open_session(client, "acp")
    await send_prompt(ws, sid, "tell me a story")
    await fake.holding.wait()
    seen = await recv_until(ws, "agent.text.delta")
    await ws.send(frame("control.prompt.cancel", {}, sid))
    frames = seen + await recv_until(ws, "session.turn.end", 60)
    hold.set()
    assert stop_reason(frames) == "cancelled"
    fake.script.append(Turn([text("Still here")]))
    after = await drive(ws, sid, "are you there?")
    assert of(after, "agent.text.done")[-1]["text"] == "Still here"


async def test_a_model_error_is_an_agent_error(live):
    client, fake = live
    fake.script.append(Turn(error=(400, "invalid_request_error", "prompt is too long")))
    sid, ws = await open_session(client, "acp")
    frames = await drive(ws, sid, "a huge prompt")
    errors = of(frames, "agent.error")
    assert errors and errors[0]["severity"] == "error" and errors[0]["code"] == "AGENT_ERROR"
    assert "too long" in errors[0]["message"].lower()
    assert stop_reason(frames) == "error"


async def test_a_crash_mid_turn_is_fatal_and_the_next_prompt_restarts(live, node_agents):
    client, fake = live
    hold = asyncio.Event()
    fake.script.append(Turn([text("working"), text("…")], hold=hold))
    sid, ws = await open_session(client, "acp")
    await send_prompt(ws, sid, "start")
    await fake.holding.wait()
    assert kill_agent(node_agents.acp[1])
    frames = await recv_until(ws, "session.turn.end", 60)
    hold.set()
    error = of(frames, "agent.error")[-1]
    assert error["severity"] == "fatal" and error["code"] == "AGENT_EXITED"
    fake.script.append(Turn([text("back")]))
    after = await drive(ws, sid, "again")
    assert of(after, "agent.text.done")[-1]["text"] == "back"


async def test_a_missing_command_is_fatal_and_says_what_to_install(tmp_path):
    path = write_agents_file(
        tmp_path,
        '[agents.acp]\nkind = "acp"\ncommand = ["rawp-no-such-acp-agent"]\n'
        'install_hint = "npm install -g @zed-industries/claude-code-acp"\n',
    )
    async with running_client(tmp_path, agents_file=path) as client:
        sid, ws = await open_session(client, "acp")
        for _ in range(2):
            frames = await drive(ws, sid, "hello")
            error = of(frames, "agent.error")[0]
            assert error["severity"] == "fatal" and error["code"] == "AGENT_START_FAILED"
            assert "npm install -g @zed-industries/claude-code-acp" in error["message"]
            assert stop_reason(frames) == "error"


def test_an_acp_entry_needs_a_command(tmp_path):
    path = write_agents_file(tmp_path, '[agents.x]\nkind = "acp"\n')
    with pytest.raises(AgentsFileError, match=r"\[agents.x\] command: missing"):
        load_agents(path)


async def test_todos_become_a_plan_and_reads_outside_the_workspace_are_refused(live, tmp_path):
    client, fake = live
    secret = tmp_path / "outside.txt"
    secret.write_text("not for agents\n")
    todos = [
        {"content": "Look", "status": "in_progress", "activeForm": "Looking"},
        {"content": "Fix", "status": "pending", "activeForm": "Fixing"},
    ]
    fake.script.append(Turn([tool_use("TodoWrite", {"todos": todos})]))
    fake.script.append(Turn([tool_use("mcp__acp__Read", {"file_path": str(secret)})]))
    fake.script.append(Turn([text("Could not read it.")]))
    sid, ws = await open_session(client, "acp")
    frames = await drive(ws, sid, "plan, then read the secret")
    assert of(frames, "agent.plan.updated")[0]["entries"] == [
        {"content": "Look", "status": "in_progress", "priority": "medium"},
        {"content": "Fix", "status": "pending", "priority": "medium"},
    ]
    read = next(r for r in of(frames, "tool.invoke.result") if r["tool_name"] == "Read")
    assert read["status"] == "error"  # RAWP §7.2: the client served nothing outside
    assert "outside the workspace" in read["output"]  # refused by the client's fs handler
    assert "not for agents" not in json.dumps(frames)
    assert "not for agents" not in json.dumps(fake.requests)


async def test_cancel_while_an_approval_waits(live):
    client, fake = live
    fake.script.append(Turn([tool_use("Bash", {"command": "touch never.txt", "description": "x"})]))
    fake.script.append(Turn([text("unused")]))
    sid, ws = await open_session(client, "acp")
    await send_prompt(ws, sid, "make a file")
    frames = await recv_until(ws, "agent.interaction.request", 60)
    await ws.send(frame("control.prompt.cancel", {}, sid))
    frames += await recv_until(ws, "session.turn.end", 60)
    assert stop_reason(frames) == "cancelled"
    assert not (client.workspace / "never.txt").exists()
    fake.script.clear()
    fake.script.append(Turn([text("fine")]))
    after = await drive(ws, sid, "next")
    assert of(after, "agent.text.done")[-1]["text"] == "fine"
