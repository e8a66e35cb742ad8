"""A recorded ACP session, replayed by a fake ACP agent through the `acp` kind end to end.

It covers what the live adapter does not send: token usage in the `session/prompt` answer,
`usage_update` costs, failed and never-finished tool calls, a permission request for a call
that was never announced, a JSON-RPC error, and the `max_tokens` and `refusal` stops.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.agents.wire import drive, of, open_session, write_agents_file
from tests.client.harness import running_client

HERE = Path(__file__).parent


def compact(frames: list[dict]) -> list[tuple]:
    out: list[tuple] = []
    for f in frames:
        t, p = f["type"], f["payload"]
        if t.endswith(".delta"):
            continue
        if t == "agent.state.changed":
            out.append((t, p["current_state"]))
        elif t in ("agent.text.done", "agent.thinking.done"):
            out.append((t, p["content_index"]))
        elif t == "tool.invoke.request":
            out.append((t, p["tool_name"]))
        elif t == "tool.invoke.result":
            out.append((t, p["invocation_id"], p["status"], p["output_type"]))
        elif t == "agent.error":
            out.append((t, p["code"], p["severity"]))
        elif t == "session.turn.end":
            out.append((t, p["stop_reason"]))
        else:
            out.append((t,))
    return out


async def test_a_recorded_acp_session_maps_in_order(tmp_path):
    command = [
        sys.executable,
        str(HERE / "fake_acp.py"),
        str(HERE / "fixtures/acp/rare_paths.json"),
    ]
    path = write_agents_file(
        tmp_path, f'[agents.fake]\nkind = "acp"\ncommand = {json.dumps(command)}\n'
    )
    async with running_client(tmp_path, agents_file=path) as client:
        (client.workspace / "notes.md").write_text("# notes\n")
        sid, ws = await open_session(client, "fake")
        refs = [{"ref_id": "ref_0", "path": "notes.md", "display_path": "notes.md"}]
        first = await drive(ws, sid, "fix <@file:ref_0|notes.md>", ["yes"], refs=refs)
        second = await drive(ws, sid, "again")
        third = await drive(ws, sid, "longer")
        fourth = await drive(ws, sid, "something bad")
        workspace = client.workspace.resolve()

    assert compact(first) == [
        ("session.turn.start",),
        ("agent.state.changed", "thinking"),
        ("agent.commands.publish",),
        ("agent.thinking.done", 0),  # the fake echoes the prompt blocks as a thought
        ("agent.plan.updated",),
        ("agent.text.done", 1),
        ("agent.state.changed", "tool_calling"),
        ("tool.invoke.request", "search"),
        ("tool.invoke.result", "c1", "success", "file_list"),
        ("tool.invoke.request", "fetch"),
        ("tool.invoke.result", "c2", "error", "text"),
        ("tool.invoke.request", "execute"),  # announced by its permission request
        ("agent.state.changed", "awaiting_input"),
        ("agent.interaction.request",),
        ("agent.state.changed", "tool_calling"),
        ("agent.state.changed", "thinking"),
        ("agent.text.done", 2),
        ("tool.invoke.result", "c3", "success", "text"),
        ("agent.state.changed", "tool_calling"),
        ("tool.invoke.request", "edit"),
        ("tool.invoke.result", "c4", "success", "diff"),
        ("agent.state.changed", "thinking"),
        ("agent.text.done", 3),
        ("agent.state.changed", "tool_calling"),
        ("tool.invoke.request", "other"),
        ("tool.invoke.result", "c5", "cancelled", "empty"),  # never finished
        ("session.usage",),
        ("agent.state.changed", "idle"),
        ("session.turn.end", "end_turn"),
    ]
    # §16.3: the text keeps the display path, the file goes as a resource_link.
    sent = json.loads("".join(p["text"] for p in of(first, "agent.thinking.delta")))
    assert sent[0] == {"type": "text", "text": "fix notes.md"}
    assert sent[1]["type"] == "resource_link" and sent[1]["name"] == "notes.md"
    assert sent[1]["uri"] == (workspace / "notes.md").as_uri()
    assert of(first, "agent.commands.publish")[0]["commands"][0] == {
        "name": "review",
        "description": "Review the changes",
        "parameters": [{"name": "what to review", "required": False}],
    }
    assert of(first, "agent.plan.updated")[0]["entries"][0] == {
        "content": "Search",
        "status": "in_progress",
        "priority": "high",
    }
    ask = of(first, "agent.interaction.request")[0]
    assert ask["invocation_id"] == "c3" and ask["prompt"] == "Allow rm build.log?"
    assert ask["options"] == [
        {"option_id": "yes", "label": "Yes", "kind": "allow_once"},
        {"option_id": "never", "label": "Never", "kind": "reject_always"},
    ]
    # The user's choice reached the agent as its own option id.
    answer = [p["text"] for p in of(first, "agent.text.done") if "answer" in p["text"]]
    assert answer == ['[answer: {"optionId": "yes", "outcome": "selected"}]']
    results = {r["invocation_id"]: r for r in of(first, "tool.invoke.result")}
    assert results["c1"]["output"] == {"files": ["src/a.py", "src/b.py"]}
    assert results["c4"]["output"] == "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+two\n"
    assert of(first, "session.usage")[0] == {
        "input_tokens": 100,
        "output_tokens": 50,
        "reasoning_tokens": 7,
        "cache_read_tokens": 30,
        "tool_invocations": 5,
        "cost_usd": 0.02,
        "context_tokens": 1000,  # the usage_update's `used` and `size` (issue 16 §4)
        "context_window": 200000,
    }
    error = of(second, "agent.error")[0]
    assert error["severity"] == "error" and "model overloaded" in error["message"]
    assert second[-1]["payload"]["stop_reason"] == "error"
    assert third[-1]["payload"]["stop_reason"] == "max_tokens"
    assert of(third, "session.usage")[0]["cost_usd"] == 0.005  # the running cost grew by this
    assert of(third, "session.usage")[0]["context_tokens"] == 1200
    assert fourth[-1]["payload"]["stop_reason"] == "refusal"
