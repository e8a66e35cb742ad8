"""Whole turns as the gateway receives them, with the pauses between frames, for counting what a
turn costs on a platform (tests/gateway/test_calls_per_turn.py, bench/gateway.py).

- `short_turn`: what `rawp demo-agent` (client/demo_agent.py) emits for a plain prompt — the
  agent's states, a hidden thinking block, one `Edit` with its diff, a task list, a short answer
  and its usage — wrapped in `session.turn.start`/`end` as the master relays it. This is the
  "short turn" of issue 19 §6 (Discord 7 calls and Slack 16 before the cuts).
- `long_turn`: the same turn for a prompt holding `long` (an answer of about 5,000 characters
  in 400-character deltas).
- `tool_heavy_turn`: ten tools — four one by one, a parallel group of three, three task-list
  updates — with the agent's states between them; its pauses make it run for several seconds
  (the typing heartbeat and the deferred ⏳ come into play).
- `end_flush_turn`: an answer whose `agent.text.done` never comes, so its text is sent at
  `session.turn.end` (rule 3 of gateway.rendering.render): the turn end → last chunk delay.

Each is a list of `(frame, pause_after_s)`; `pause` scales the pauses (0: all at once).
"""

from __future__ import annotations

from typing import Any

from client.demo_agent import COMMANDS, answer_text, unified_diff
from rawp.frames import Frame, make_frame

SESSION = "5e5e5e5e-0000-4000-8000-000000000019"
PROMPT_ID = "0b6f8e2a-0000-4000-8000-0000000000aa"
DEMO_PAUSE_S = 0.05  # RAWP_DEMO_PAUSE's default

Step = tuple[Frame, float]


def _frames(turn_id: str, events: list[tuple[str, dict[str, Any], float]], pause: float):
    def one(type_: str, payload: dict[str, Any]) -> Frame:
        turn = None if type_ == "agent.commands.publish" else turn_id
        return make_frame(type_, payload, session_id=SESSION, turn_id=turn)

    start = {"turn_id": turn_id, "prompt_message_id": PROMPT_ID}
    steps: list[Step] = [(one("session.turn.start", start), 0.0)]
    steps += [(one(t, p), wait * pause) for t, p, wait in events]
    end = {"turn_id": turn_id, "stop_reason": "end_turn", "duration_ms": 300}
    steps.append((one("session.turn.end", end), 0.0))
    return steps


def _state(previous: str, current: str) -> tuple[str, dict[str, Any], float]:
    return ("agent.state.changed", {"previous_state": previous, "current_state": current}, 0)


def _demo(turn_id: str, prompt: str, pause: float) -> list[Step]:
    """The frames `rawp demo-agent` prints for `prompt` (its `run`, without files)."""
    tasks = [
        {"id": "1", "content": "Read the prompt", "status": "completed"},
        {"id": "2", "content": "Edit src/app.py", "status": "completed"},
        {"id": "3", "content": "Write the answer", "status": "in_progress"},
    ]
    text = answer_text(prompt, [], "text")
    events = [
        _state("idle", "thinking"),
        ("agent.thinking.delta", {"content_index": 0, "text": "Reading the prompt"}, 1),
        ("agent.thinking.delta", {"content_index": 0, "text": " and the files it names."}, 0),
        ("agent.thinking.done", {"content_index": 0, "duration_ms": 50}, 0),
        ("agent.commands.publish", {"commands": COMMANDS}, 0),
        _state("thinking", "tool_calling"),
        (
            "tool.invoke.request",
            {"invocation_id": "demo-edit-1", "tool_name": "Edit",
             "input": {"path": "src/app.py"}, "title": "Edit src/app.py"},
            1,
        ),
        (
            "tool.invoke.result",
            {"invocation_id": "demo-edit-1", "tool_name": "Edit", "status": "success",
             "output_type": "diff", "output": unified_diff("src/app.py"), "duration_ms": 7},
            0,
        ),
        ("tool.invoke.request", {"invocation_id": "demo-todo-1", "tool_name": "TodoWrite"}, 0),
        (
            "tool.invoke.result",
            {"invocation_id": "demo-todo-1", "tool_name": "TodoWrite", "status": "success",
             "output_type": "structured", "output": {"tasks": tasks}},
            0,
        ),
        _state("tool_calling", "thinking"),
    ]  # fmt: skip
    for start in range(0, len(text), 400):
        piece = {"content_index": 1, "text": text[start : start + 400]}
        events.append(("agent.text.delta", piece, 1))
    events += [
        ("agent.text.done", {"content_index": 1, "text": text}, 0),
        ("session.usage", {"input_tokens": 4, "output_tokens": 20, "tool_invocations": 2}, 0),
        _state("thinking", "idle"),
    ]
    return _frames(turn_id, [(t, p, w * DEMO_PAUSE_S) for t, p, w in events], pause)


def short_turn(turn_id: str = "turn-short", pause: float = 1.0) -> list[Step]:
    return _demo(turn_id, "fix the login bug", pause)


def long_turn(turn_id: str = "turn-long", pause: float = 1.0) -> list[Step]:
    return _demo(turn_id, "a long explanation please", pause)


def tool_heavy_turn(turn_id: str = "turn-tools", pause: float = 1.0) -> list[Step]:
    def request(inv: str, name: str, inp: dict, group: str | None = None, wait: float = 0.0):
        payload = {"invocation_id": inv, "tool_name": name, "input": inp}
        if group:
            payload["parallel_group_id"] = group
        return ("tool.invoke.request", payload, wait)

    def result(inv: str, name: str, output: Any, kind: str = "text", wait: float = 0.0):
        payload = {"invocation_id": inv, "tool_name": name, "status": "success",
                   "output_type": kind, "output": output, "duration_ms": 400}  # fmt: skip
        return ("tool.invoke.result", payload, wait)

    def todo(n: int, done: int):
        tasks = [
            {"id": str(i), "content": f"Step {i}", "status": "completed" if i < done else "pending"}
            for i in range(4)
        ]
        listed = result(f"td{n}", "TodoWrite", {"tasks": tasks}, "structured")
        return [request(f"td{n}", "TodoWrite", {}), listed]

    events = [_state("idle", "thinking"), _state("thinking", "tool_calling"), *todo(0, 0)]
    one_by_one = [
        ("Read", {"file_path": "src/a.py"}),
        ("Grep", {"pattern": "TODO"}),
        ("Bash", {"command": "make test"}),
        ("Edit", {"file_path": "src/a.py"}),
    ]
    for n, (name, inp) in enumerate(one_by_one):
        events += [request(f"s{n}", name, inp, wait=0.6), result(f"s{n}", name, f"ok {n}")]
        if n == 1:
            events += todo(1, 2)
    events += [
        request("g1", "Bash", {"command": "git status"}, "grp"),
        request("g2", "Bash", {"command": "git diff"}, "grp"),
        request("g3", "Bash", {"command": "git log -1"}, "grp", wait=0.8),
        result("g2", "Bash", "no changes"),
        result("g1", "Bash", "On branch main"),
        result("g3", "Bash", "abc123 last commit"),
        *todo(2, 4),
        _state("tool_calling", "thinking"),
        ("agent.text.delta", {"content_index": 0, "text": "All four steps are done."}, 0.3),
        ("agent.text.done", {"content_index": 0, "text": "All four steps are done."}, 0),
        _state("thinking", "idle"),
    ]
    return _frames(turn_id, events, pause)


def end_flush_turn(turn_id: str = "turn-flush", text: str = "The answer, sent at turn end."):
    """A state change and text deltas without their `done`: the text goes out at turn end."""
    events = [
        _state("idle", "thinking"),
        ("agent.text.delta", {"content_index": 0, "text": text[:10]}, 0),
        ("agent.text.delta", {"content_index": 0, "text": text[10:]}, 0),
    ]
    return _frames(turn_id, events, 0.0)
