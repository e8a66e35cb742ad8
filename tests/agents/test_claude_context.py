"""Context use from Claude Code's stream-json (client.agents.claude_stream, issue 30 §4): what
the main agent's last model call held, against the window of its model. The real CLI's figures
are checked in test_claude_code; here the lines that must not count are fed too."""

from __future__ import annotations

from typing import Any

from client.agents.claude_stream import ClaudeTurn

RESULT = {"type": "result", "subtype": "success", "usage": {"input_tokens": 1}}


def stream(event: dict[str, Any], parent: str | None = None) -> dict[str, Any]:
    return {"type": "stream_event", "event": event, "parent_tool_use_id": parent}


def call(message_id: str, model: str, tokens: tuple[int, int, int, int], parent=None):
    """One model call as the CLI streams it: message_start (input side), message_delta."""
    fresh, read, written, output = tokens
    usage = {"input_tokens": fresh, "cache_read_input_tokens": read}
    usage |= {"cache_creation_input_tokens": written, "output_tokens": 1}
    start = {"type": "message_start", "message": {"id": message_id, "model": model, "usage": usage}}
    delta = {"type": "message_delta", "delta": {}, "usage": {"output_tokens": output}}
    return [stream(start, parent), stream(delta, parent), stream({"type": "message_stop"}, parent)]


async def usage_of(lines: list[dict[str, Any]], result: dict[str, Any]) -> dict[str, Any]:
    sent: list[tuple[str, dict[str, Any]]] = []

    async def emit(kind: str, payload: dict[str, Any]) -> None:
        sent.append((kind, payload))

    turn = ClaudeTurn(emit)
    for line in lines:
        await turn.feed(line)
    await turn.finish(result, cancelled=False)
    return next(p for kind, p in sent if kind == "session.usage")


async def test_the_main_agents_last_call_counts_against_its_models_window():
    lines = call("m1", "claude-main", (10, 1_000, 500, 40))
    lines += call("s1", "claude-small", (90_000, 0, 0, 900), parent="toolu_task")  # a sub-agent
    lines += call("m2", "claude-main", (20, 1_500, 300, 60))
    windows = {"claude-main": {"contextWindow": 200_000}, "claude-small": {"contextWindow": 1_000}}
    usage = await usage_of(lines, RESULT | {"modelUsage": windows})
    assert usage["context_tokens"] == 20 + 1_500 + 300 + 60
    assert usage["context_window"] == 200_000


async def test_an_assistant_message_that_was_not_streamed_counts_too():
    body = {"id": "m1", "model": "claude-main", "content": [{"type": "text", "text": "hi"}]}
    body["usage"] = {"input_tokens": 700, "output_tokens": 30}
    windows = {"claude-main": {"contextWindow": 200_000}}
    line = {"type": "assistant", "message": body}
    usage = await usage_of([line], RESULT | {"modelUsage": windows})
    assert (usage["context_tokens"], usage["context_window"]) == (730, 200_000)


async def test_no_window_or_no_call_reports_no_context():
    without_window = await usage_of(call("m1", "claude-main", (10, 0, 0, 5)), RESULT)
    assert "context_tokens" not in without_window and "context_window" not in without_window
    windows = {"claude-main": {"contextWindow": 200_000}}
    without_call = await usage_of([], RESULT | {"modelUsage": windows})
    assert "context_tokens" not in without_call
