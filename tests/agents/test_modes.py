"""Modes from chat (issue 30 §1) end to end: `control.mode.set` → the kind → the real
`claude` CLI (its `set_permission_mode` control request, or `--permission-mode` for a CLI
started later) and the real Claude Code ACP adapter (`session/set_mode`), each against the
fake Anthropic API. A change is announced by a new `session.capabilities`; a mode the agent
does not offer is a `session.error` that names the ones it does."""

from __future__ import annotations

import asyncio
import json

import psutil
import pytest

from tests.agents.conftest import model_env
from tests.agents.fake_anthropic import FakeAnthropic, Turn, text, tool_use
from tests.agents.wire import drive, inline_table, kill_agent, of, write_agents_file
from tests.client.harness import frame, recv, recv_until, running_client


@pytest.fixture
async def live(tmp_path, node_agents):
    async with FakeAnthropic() as fake:
        env = model_env(fake.base_url, tmp_path / "home")
        path = write_agents_file(
            tmp_path,
            '[agents.claude]\nkind = "claude-code"\n'
            f"command = [{json.dumps(str(node_agents.claude))}]\nenv = {inline_table(env)}\n"
            'model = "claude-rawp-test"\n'
            '[agents.acp]\nkind = "acp"\n'
            f"command = {json.dumps(node_agents.acp)}\nenv = {inline_table(env)}\n",
        )
        async with running_client(tmp_path, agents_file=path) as client:
            yield client, fake


async def greeted(client, agent: str):
    sid, ws = await client.start_session(agent=agent)
    caps, _catalog = await recv(ws), await recv(ws)
    return sid, ws, caps["payload"]


async def set_mode(ws, sid: str, mode: str) -> dict:
    """Send `control.mode.set`; the answer: the new capabilities, or the error."""
    await ws.send(frame("control.mode.set", {"mode": mode}, sid))
    while True:
        answer = await recv(ws, 90)
        if answer["type"] in ("session.capabilities", "session.error"):
            return answer


async def killed_and_reaped(marker: str) -> None:
    """Kill the agent and wait until the client has reaped it, so the next prompt finds it
    gone rather than racing its death (that race is the crash tests' subject, not ours)."""
    pids = [p.pid for p in psutil.Process().children(recursive=True) if _runs(p, marker)]
    assert kill_agent(marker)
    for _ in range(200):
        if not any(psutil.pid_exists(pid) for pid in pids):
            break
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.2)  # the event loop hears of the exit just after the reaping


def _runs(proc: psutil.Process, marker: str) -> bool:
    try:
        return marker in " ".join(proc.cmdline())
    except psutil.Error:
        return False


def edit_turns(fake, target, tool: str = "Edit") -> None:
    fake.script.append(
        Turn([tool_use(tool, {"file_path": str(target), "old_string": "a", "new_string": "b"})])
    )
    fake.script.append(Turn([text("Edited.")]))


async def test_claude_code_modes_before_and_during_the_process(live):
    client, fake = live
    sid, ws, caps = await greeted(client, "claude")
    assert [m["id"] for m in caps["modes"]] == ["default", "acceptEdits", "plan"]
    assert caps["current_mode"] == "default"
    # Before the CLI runs: the mode is kept and the CLI starts in it.
    changed = await set_mode(ws, sid, "plan")
    assert changed["type"] == "session.capabilities"
    assert changed["payload"]["current_mode"] == "plan"
    fake.script.append(Turn([text("A plan.")]))
    await drive(ws, sid, "plan something")
    assert "plan mode" in json.dumps(fake.main_requests()[-1]).lower()
    # While it runs: the control request switches the live CLI, whose edits now need no
    # approval (`drive` fails on any approval request).
    changed = await set_mode(ws, sid, "acceptEdits")
    assert changed["payload"]["current_mode"] == "acceptEdits"
    target = client.workspace / "a.txt"
    target.write_text("a\n")
    edit_turns(fake, target)
    frames = await drive(ws, sid, "edit it")
    assert not of(frames, "agent.interaction.request")
    assert target.read_text() == "b\n"
    # The CLI's own report at the turn's start agrees: no change announced.
    assert not of(frames, "session.capabilities")
    refused = await set_mode(ws, sid, "yolo")
    assert refused["type"] == "session.error"
    assert refused["payload"]["code"] == "INVALID_MODE"
    assert "default, acceptEdits, plan" in refused["payload"]["message"]


async def test_acp_modes_start_the_agent_and_match_by_name(live, node_agents):
    client, fake = live
    sid, ws, caps = await greeted(client, "acp")
    assert "modes" not in caps  # not known before the agent runs
    started = await set_mode(ws, sid, "acceptEdits")  # starts the adapter for it
    assert started["type"] == "session.capabilities"
    assert {"default", "acceptEdits", "plan"} <= {m["id"] for m in started["payload"]["modes"]}
    assert started["payload"]["current_mode"] == "default"  # its modes, once it runs
    changed = await recv_until(ws, "session.capabilities", 60)
    assert changed[-1]["payload"]["current_mode"] == "acceptEdits"
    target = client.workspace / "a.txt"
    target.write_text("a\n")
    edit_turns(fake, target, "mcp__acp__Edit")  # the adapter's own edit tool
    frames = await drive(ws, sid, "edit it")
    assert not of(frames, "agent.interaction.request")
    assert target.read_text() == "b\n"
    # A restarted adapter opens a new ACP session: the chosen mode is set on it again.
    await killed_and_reaped(node_agents.acp[1])
    target.write_text("a\n")
    edit_turns(fake, target, "mcp__acp__Edit")
    frames = await drive(ws, sid, "edit it again")
    assert not of(frames, "agent.interaction.request")
    assert target.read_text() == "b\n"
    by_name = await set_mode(ws, sid, "plan mode")  # the adapter's name "Plan Mode"
    assert by_name["payload"]["current_mode"] == "plan"
    refused = await set_mode(ws, sid, "yolo")
    assert refused["payload"]["code"] == "INVALID_MODE"


async def test_compact_runs_the_agents_compact_command(live):
    client, fake = live
    sid, ws, _ = await greeted(client, "claude")
    early = frame("control.context.compact", {}, sid)
    await ws.send(early)  # nothing published yet: nothing to compact with
    refused = await recv(ws)
    assert refused["payload"]["code"] == "UNSUPPORTED_CONTROL"
    fake.script.append(Turn([text("Hello.")]))
    await drive(ws, sid, "hi")  # the CLI publishes its commands, `compact` among them
    fake.script.append(Turn([text("A summary of the conversation.")]))
    await ws.send(frame("control.context.compact", {"instructions": "keep the names"}, sid))
    frames = await recv_until(ws, "session.turn.end", 90)
    assert of(frames, "session.context.compacted"), [f["type"] for f in frames]
    assert "keep the names" in json.dumps(fake.main_requests()[-1])


async def test_claude_code_leaving_plan_mode_by_itself_is_announced(live):
    client, fake = live
    sid, ws, _ = await greeted(client, "claude")
    assert (await set_mode(ws, sid, "plan"))["payload"]["current_mode"] == "plan"
    fake.script.append(Turn([tool_use("ExitPlanMode", {"plan": "1. change a.txt"})]))
    fake.script.append(Turn([text("Plan accepted.")]))
    await drive(ws, sid, "plan it", answers=["allow"])  # the user accepts the plan
    fake.script.append(Turn([text("Working.")]))
    frames = await drive(ws, sid, "go")
    announced = of(frames, "session.capabilities")
    assert announced and announced[-1]["current_mode"] != "plan", announced
