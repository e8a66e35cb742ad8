"""The `claude-code` kind end to end: WebSocket → the kind → the real `claude` CLI → a fake
Anthropic API that scripts what "the model" does. The CLI runs real tools in the workspace."""

from __future__ import annotations

import asyncio
import json

import pytest

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
            '[agents.claude]\nkind = "claude-code"\n'
            f"command = [{json.dumps(str(node_agents.claude))}]\nenv = {inline_table(env)}\n"
            'model = "claude-rawp-test"\n',
        )
        async with running_client(tmp_path, agents_file=path) as client:
            yield client, fake


async def test_plain_answer_with_thinking_commands_and_usage(live):
    client, fake = live
    fake.script.append(
        Turn([thinking("The user greets me."), text("Hello there")], usage=(300, 20))
    )
    sid, ws = await open_session(client, "claude")
    frames = await drive(ws, sid, "hi")
    assert kinds(frames, drop_deltas=True) == [
        "session.turn.start",
        "agent.commands.publish",
        "agent.state.changed",
        "tool.catalog.publish",  # the tools this CLI version really has
        "agent.thinking.done",
        "agent.text.done",
        "session.usage",
        "agent.state.changed",
        "session.turn.end",
    ]
    assert "".join(p["text"] for p in of(frames, "agent.thinking.delta")) == "The user greets me."
    assert of(frames, "agent.thinking.done")[0]["content_index"] == 0
    assert of(frames, "agent.text.done") == [{"content_index": 1, "text": "Hello there"}]
    usage = of(frames, "session.usage")[0]
    assert usage["input_tokens"] == 300 and usage["output_tokens"] == 20 and usage["cost_usd"] > 0
    tools = {t["name"]: t for t in of(frames, "tool.catalog.publish")[0]["tools"]}
    assert tools["Bash"]["category"] == "execute" and tools["Bash"]["direct"] is False
    assert tools["Edit"]["category"] == "edit"
    commands = {c["name"] for c in of(frames, "agent.commands.publish")[0]["commands"]}
    assert commands  # whatever this CLI version offers, from its initialize answer
    assert stop_reason(frames) == "end_turn"
    # The prompt reached the model: the CLI really ran against the fake.
    assert "hi" in json.dumps(fake.main_requests()[0]["messages"][-1])
    assert fake.main_requests()[0]["model"] == "claude-rawp-test"  # the `model` setting
    # A second turn: the same process, the conversation goes on; the cost is a per-turn delta.
    fake.script.append(Turn([text("Again")], usage=(300, 20)))
    again = await drive(ws, sid, "and again")
    assert of(again, "session.usage")[0]["cost_usd"] == pytest.approx(usage["cost_usd"])
    assert "agent.commands.publish" not in kinds(again)  # unchanged, not re-sent
    assert "tool.catalog.publish" not in kinds(again)
    assert "Hello there" in json.dumps(fake.main_requests()[-1]["messages"])


async def test_two_reads_in_parallel_then_an_edit_diff(live):
    # This CLI version has no Glob/Grep/TodoWrite tools (it searches with Bash); their
    # mapping is covered by the recorded transcripts.
    client, fake = live
    target = client.workspace / "app.py"
    target.write_text("def greet():\n    return 'hi'\n")
    (client.workspace / "README").write_text("greets\n")
    fake.script.append(
        Turn(
            [
                tool_use("Read", {"file_path": str(target)}),
                tool_use("Read", {"file_path": str(client.workspace / "README")}),
            ]
        )
    )
    fake.script.append(
        Turn(
            [
                tool_use(
                    "Edit",
                    {"file_path": str(target), "old_string": "'hi'", "new_string": "'hello'"},
                )
            ]
        )
    )
    fake.script.append(Turn([text("Changed the greeting.")]))
    sid, ws = await open_session(client, "claude")
    refs = [{"ref_id": "ref_0", "path": "app.py", "display_path": "app.py"}]
    frames = await drive(ws, sid, "make <@file:ref_0|app.py> say hello", ["allow"], refs=refs)
    # §16.3: the sentence keeps the display path; the @-mention made the CLI attach the file.
    first = json.dumps(fake.main_requests()[0]["messages"])
    assert "make app.py say hello" in first and "@app.py" in first
    assert "return 'hi'" in first
    requests = of(frames, "tool.invoke.request")
    assert [r["tool_name"] for r in requests] == ["Read", "Read", "Edit"]
    assert requests[0]["parallel_group_id"] == requests[1]["parallel_group_id"] is not None
    assert "parallel_group_id" not in requests[2]
    results = of(frames, "tool.invoke.result")
    assert [r["invocation_id"] for r in results] == [r["invocation_id"] for r in requests]
    read, readme, edit = results
    assert read["output_type"] == readme["output_type"] == "file_content"
    assert "return 'hi'" in read["output"]["content"] and read["output"]["path"] == str(target)
    assert "greets" in readme["output"]["content"]
    assert edit["status"] == "success" and edit["output_type"] == "diff"
    assert "-    return 'hi'" in edit["output"] and "+    return 'hello'" in edit["output"]
    assert target.read_text() == "def greet():\n    return 'hello'\n"  # the real tool ran
    approval = of(frames, "agent.interaction.request")[0]
    assert approval["invocation_id"] == requests[2]["invocation_id"]
    assert of(frames, "session.usage")[0]["tool_invocations"] == 3


async def test_bash_needs_approval_allowed_once_denied_once(live):
    client, fake = live
    fake.script.append(
        Turn([tool_use("Bash", {"command": "touch allowed.txt", "description": "a"})])
    )
    fake.script.append(
        Turn([tool_use("Bash", {"command": "touch denied.txt", "description": "b"})])
    )
    fake.script.append(Turn([text("Done.")]))
    sid, ws = await open_session(client, "claude")
    frames = await drive(ws, sid, "make two files", answers=["allow", "deny"])
    sequence = kinds(frames, drop_deltas=True)
    first = sequence.index("tool.invoke.request")
    assert sequence[first : first + 4] == [
        "tool.invoke.request",
        "agent.state.changed",
        "agent.interaction.request",
        "agent.state.changed",
    ]
    asks = of(frames, "agent.interaction.request")
    assert [a["kind"] for a in asks] == ["approval", "approval"]
    assert "touch allowed.txt" in asks[0]["prompt"]
    assert {o["option_id"] for o in asks[0]["options"]} >= {"allow", "deny"}
    states = [s["current_state"] for s in of(frames, "agent.state.changed")]
    assert "awaiting_input" in states and states[-1] == "idle"
    results = of(frames, "tool.invoke.result")
    assert results[0]["status"] == "success"
    assert results[1]["status"] == "error" and results[1]["error"]["code"] == "PERMISSION_DENIED"
    assert (client.workspace / "allowed.txt").exists()
    assert not (client.workspace / "denied.txt").exists()
    assert stop_reason(frames) == "end_turn"


async def test_cancel_mid_turn_then_the_session_goes_on(live):
    client, fake = live
    hold = asyncio.Event()
    fake.script.append(Turn([text("A long story begins"), text("and never ends")], hold=hold))
    sid, ws = await open_session(client, "claude")
    await send_prompt(ws, sid, "tell me a story")
    await fake.holding.wait()
    seen = await recv_until(ws, "agent.text.delta")
    await ws.send(frame("control.prompt.cancel", {}, sid))
    frames = seen + await recv_until(ws, "session.turn.end")
    hold.set()
    assert stop_reason(frames) == "cancelled"
    assert "agent.error" not in kinds(frames)
    fake.script.append(Turn([text("Still here")]))
    after = await drive(ws, sid, "are you there?")
    assert of(after, "agent.text.done")[-1]["text"] == "Still here"


async def test_a_model_error_is_an_agent_error(live):
    client, fake = live
    fake.script.append(Turn(error=(400, "invalid_request_error", "prompt is too long")))
    sid, ws = await open_session(client, "claude")
    frames = await drive(ws, sid, "a huge prompt")
    error = of(frames, "agent.error")[0]
    assert error["severity"] == "error" and error["code"] == "MODEL_ERROR"
    assert "too long" in error["message"].lower()
    assert stop_reason(frames) == "error"
    assert "agent.text.delta" not in kinds(frames)  # the CLI's note is not an answer


async def test_a_crash_mid_turn_is_fatal_and_the_next_prompt_resumes(live, node_agents):
    client, fake = live
    fake.script.append(Turn([text("first answer")]))
    hold = asyncio.Event()
    fake.script.append(Turn([text("working on it"), text("…")], hold=hold))
    sid, ws = await open_session(client, "claude")
    await drive(ws, sid, "remember this")  # a finished turn: the CLI has saved it
    await send_prompt(ws, sid, "start")
    await fake.holding.wait()
    assert kill_agent(str(node_agents.claude))
    frames = await recv_until(ws, "session.turn.end", 60)
    hold.set()
    error = of(frames, "agent.error")[-1]
    assert error["severity"] == "fatal" and error["code"] == "AGENT_EXITED"
    assert stop_reason(frames) == "error"
    fake.script.append(Turn([text("back")]))
    after = await drive(ws, sid, "again")
    assert of(after, "agent.text.done")[-1]["text"] == "back"
    assert "agent.error" not in kinds(after)
    # The new process resumed the conversation (--resume).
    assert "first answer" in json.dumps(fake.main_requests()[-1]["messages"])


async def test_a_missing_binary_is_fatal_and_names_the_install(tmp_path):
    path = write_agents_file(
        tmp_path, '[agents.claude]\nkind = "claude-code"\ncommand = ["rawp-no-such-claude"]\n'
    )
    async with running_client(tmp_path, agents_file=path) as client:
        sid, ws = await open_session(client, "claude")
        for _ in range(2):  # the session stays usable: each prompt says it again
            frames = await drive(ws, sid, "hello")
            error = of(frames, "agent.error")[0]
            assert error["severity"] == "fatal"
            assert "npm install -g @anthropic-ai/claude-code" in error["message"]
            assert stop_reason(frames) == "error"


async def test_cancel_while_an_approval_waits(live):
    client, fake = live
    fake.script.append(Turn([tool_use("Bash", {"command": "touch never.txt", "description": "x"})]))
    fake.script.append(Turn([text("unused")]))
    sid, ws = await open_session(client, "claude")
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


async def test_context_use_and_a_compaction_from_the_real_cli(live):
    """Issue 30 §4: the turn's usage carries the context the main agent's last model call held
    (input + output) and the model's window (`result.modelUsage[…].contextWindow`); the CLI's
    own `/compact` makes a `compact_boundary`, which becomes `session.context.compacted`."""
    client, fake = live
    fake.script.append(Turn([text("Noted")], usage=(150_000, 2_000)))
    sid, ws = await open_session(client, "claude")
    usage = of(await drive(ws, sid, "remember this"), "session.usage")[0]
    assert usage["context_tokens"] == 152_000
    assert usage["context_window"] >= 200_000
    compacted = await drive(ws, sid, "/compact")
    assert of(compacted, "session.context.compacted") == [{"before_tokens": 152_000}]
    fake.script.append(Turn([text("Fresh")], usage=(9_000, 100)))
    after = of(await drive(ws, sid, "go on"), "session.usage")[0]
    assert after["context_tokens"] == 9_100  # what the next call really held
