"""Recorded Claude Code transcripts, replayed through the `claude-code` kind end to end.

The rare paths a live run against the fake model cannot reach — redacted thinking, rate-limit
events, API retries, an error result, the max-turns stop, sub-agents, the search, web and task
tools of CLI versions that have them — are JSON-lines files of the CLI's native stream under
fixtures/claude/. `fake_claude.py` plays them back as the `claude` binary; the tests assert
the DPS frames the client sends over its WebSocket, in order.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.agents.wire import drive, kinds, of, open_session, write_agents_file
from tests.client.harness import running_client

HERE = Path(__file__).parent
FAKE = HERE / "fake_claude.py"


@pytest.fixture
def replay(tmp_path):
    def agents(transcript: str) -> Path:
        command = [sys.executable, str(FAKE), str(HERE / "fixtures" / "claude" / transcript)]
        return write_agents_file(
            tmp_path, f'[agents.claude]\nkind = "claude-code"\ncommand = {json.dumps(command)}\n'
        )

    return agents


def compact(frames: list[dict]) -> list[tuple]:
    """Each frame as (type, the payload fields that matter here), deltas merged."""
    out: list[tuple] = []
    for f in frames:
        p = f["payload"]
        t = f["type"]
        if t in ("agent.text.delta", "agent.thinking.delta"):
            if out and out[-1][0] == t and out[-1][1] == p["content_index"]:
                out[-1] = (t, p["content_index"], out[-1][2] + p["text"])
            else:
                out.append((t, p["content_index"], p["text"]))
        elif t == "agent.text.done":
            out.append((t, p["content_index"], p["text"]))
        elif t == "agent.thinking.done":
            out.append((t, p["content_index"], p["redacted"]))
        elif t == "agent.state.changed":
            out.append((t, p["current_state"]))
        elif t == "agent.error":
            out.append((t, p["code"], p["severity"]))
        elif t == "tool.invoke.request":
            out.append(
                (t, p["tool_name"], p.get("parallel_group_id"), p.get("parent_invocation_id"))
            )
        elif t == "tool.invoke.result":
            out.append((t, p["tool_name"], p["status"], p["output_type"]))
        elif t == "session.turn.end":
            out.append((t, p["stop_reason"]))
        else:
            out.append((t,))
    return out


async def test_redacted_thinking_rate_limit_warning_retry_and_usage(tmp_path, replay):
    async with running_client(tmp_path, agents_file=replay("rare_paths.jsonl")) as client:
        sid, ws = await open_session(client, "claude")
        frames = await drive(ws, sid, "what is the answer?")
    assert compact(frames) == [
        ("session.turn.start",),
        ("agent.commands.publish",),
        ("agent.state.changed", "thinking"),
        ("tool.catalog.publish",),
        ("agent.error", "RATE_LIMIT", "warning"),
        ("agent.error", "API_RETRY", "warning"),
        ("agent.thinking.delta", 0, "Let me think"),
        ("agent.thinking.done", 0, False),
        ("agent.thinking.done", 1, True),
        ("agent.text.delta", 2, "The answer is 42."),
        ("agent.text.done", 2, "The answer is 42."),
        ("session.usage",),
        ("agent.state.changed", "idle"),
        ("session.turn.end", "end_turn"),
    ]
    commands = of(frames, "agent.commands.publish")[0]["commands"]
    assert commands[0] == {
        "name": "review",
        "description": "Review a pull request",
        "parameters": [{"name": "[pr number]", "required": False}],
    }
    assert "five_hour" in of(frames, "agent.error")[0]["message"]
    assert of(frames, "session.usage")[0] == {
        "input_tokens": 100,
        "output_tokens": 20,
        "cache_read_tokens": 50,
        "cache_write_tokens": 10,
        "reasoning_tokens": 5,
        "tool_invocations": 0,
        "cost_usd": 0.0525,
    }


async def test_every_tool_result_type_parallel_groups_and_a_sub_agent(tmp_path, replay):
    async with running_client(tmp_path, agents_file=replay("tools.jsonl")) as client:
        sid, ws = await open_session(client, "claude")
        frames = await drive(ws, sid, "find and fix the auth bug")
    group = "group-msg_b"
    assert compact(frames) == [
        ("session.turn.start",),
        ("agent.state.changed", "thinking"),
        ("tool.catalog.publish",),
        ("agent.text.delta", 0, "Plan first."),
        ("agent.text.done", 0, "Plan first."),
        ("agent.state.changed", "tool_calling"),
        ("tool.invoke.request", "TodoWrite", group, None),
        ("tool.invoke.request", "Grep", group, None),
        ("tool.invoke.request", "Glob", group, None),
        ("tool.invoke.result", "TodoWrite", "success", "structured"),
        ("tool.invoke.result", "Grep", "success", "file_list"),
        ("tool.invoke.result", "Glob", "success", "file_list"),
        ("tool.invoke.request", "Task", None, None),
        ("tool.invoke.request", "Read", None, "toolu_4"),
        ("tool.invoke.result", "Read", "success", "file_content"),
        ("tool.invoke.result", "Task", "success", "agent_result"),
        ("tool.invoke.request", "WebFetch", None, None),
        ("tool.invoke.result", "WebFetch", "success", "web_content"),
        ("tool.invoke.request", "Bash", None, None),
        ("tool.invoke.result", "Bash", "error", "text"),
        ("agent.state.changed", "thinking"),
        ("agent.text.delta", 1, "Done."),
        ("agent.text.done", 1, "Done."),
        ("session.usage",),
        ("agent.state.changed", "idle"),
        ("session.turn.end", "end_turn"),
    ]
    results = {r["tool_name"]: r for r in of(frames, "tool.invoke.result")}
    assert results["TodoWrite"]["output"] == {
        "tasks": [
            {"id": "1", "content": "Find the bug", "status": "in_progress"},
            {"id": "2", "content": "Fix it", "status": "pending"},
        ]
    }
    assert results["Grep"]["output"] == {"files": ["src/a.py", "src/b.py"]}
    assert results["Read"]["output"] == {
        "path": "/ws/src/a.py",
        "content": "x = 1\n",
        "start_line": 1,
    }
    assert results["Task"]["output"] == {"content": "The bug is in src/a.py line 1."}
    assert results["WebFetch"]["output"]["url"] == "https://example.com/"
    assert results["Bash"]["error"]["code"] == "TOOL_ERROR"
    assert of(frames, "session.usage")[0]["tool_invocations"] == 7


async def test_an_error_result_and_the_max_turns_stop(tmp_path, replay):
    async with running_client(tmp_path, agents_file=replay("errors.jsonl")) as client:
        sid, ws = await open_session(client, "claude")
        first = await drive(ws, sid, "go")
        second = await drive(ws, sid, "go on")
    assert compact(first) == [
        ("session.turn.start",),
        ("agent.state.changed", "thinking"),
        ("tool.catalog.publish",),
        ("agent.error", "RATE_LIMIT", "warning"),
        ("session.usage",),
        ("agent.error", "MODEL_ERROR", "error"),
        ("agent.state.changed", "error"),
        ("session.turn.end", "error"),
    ]
    error = of(first, "agent.error")[1]
    assert error["retryable"] is True and "Rate limit" in error["message"]
    assert kinds(second)[-1] == "session.turn.end"
    assert second[-1]["payload"]["stop_reason"] == "max_turn_requests"
    assert of(second, "session.usage")[0]["cost_usd"] == 0.002


async def test_a_crash_then_a_conversation_that_cannot_be_resumed(tmp_path, replay):
    transcript = tmp_path / "crash.jsonl"  # the fake edits it: work on a copy
    transcript.write_text((HERE / "fixtures" / "claude" / "crash.jsonl").read_text())
    command = [sys.executable, str(FAKE), str(transcript)]
    path = write_agents_file(
        tmp_path, f'[agents.claude]\nkind = "claude-code"\ncommand = {json.dumps(command)}\n'
    )
    async with running_client(tmp_path, agents_file=path) as client:
        sid, ws = await open_session(client, "claude")
        crashed = await drive(ws, sid, "go")
        again = await drive(ws, sid, "go on")
    assert compact(crashed)[-4:] == [
        ("agent.text.done", 0, "working"),
        ("agent.error", "AGENT_EXITED", "fatal"),
        ("agent.state.changed", "error"),
        ("session.turn.end", "error"),
    ]
    assert "the fake crashed" in of(crashed, "agent.error")[0]["message"]
    assert compact(again)[:2] == [
        ("session.turn.start",),
        ("agent.error", "RESUME_FAILED", "warning"),
    ]
    assert of(again, "agent.text.done")[-1]["text"] == "back"
    assert again[-1]["payload"]["stop_reason"] == "end_turn"
