"""The order of Claude Code's stream-json lines when a tool runs while its model message is
still streaming (client.agents.claude_stream): the CLI starts a tool as soon as its tool_use
block is complete, so on a busy machine the first Read's result can come before the second
Read's block. Both requests still make one parallel group, and each result follows its request.

The real CLI shows this only under load (test_claude_code's two-Reads test failed that way
beside two busy loops); here the lines are fed in that order, and in the order of a quiet
machine, to the same turn mapper."""

from __future__ import annotations

from typing import Any

import pytest

from client.agents.claude_stream import ClaudeTurn

MESSAGE = "msg_01"


def stream(event: dict[str, Any]) -> dict[str, Any]:
    return {"type": "stream_event", "event": event}


def tool_use(block_id: str, path: str) -> dict[str, Any]:
    """The CLI's `assistant` line for one completed tool_use block of MESSAGE."""
    block = {"type": "tool_use", "id": block_id, "name": "Read", "input": {"file_path": path}}
    return {"type": "assistant", "message": {"id": MESSAGE, "content": [block]}}


def result(block_id: str) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": block_id, "content": "file text"}
    return {"type": "user", "message": {"content": [block]}}


START = stream({"type": "message_start", "message": {"id": MESSAGE}})
STOP = stream({"type": "message_stop"})
QUIET = [START, tool_use("a", "/w/app.py"), tool_use("b", "/w/README"), STOP, result("a"),
         result("b")]  # fmt: skip
# The first Read ran and answered before the model had streamed the second block.
BUSY = [START, tool_use("a", "/w/app.py"), result("a"), tool_use("b", "/w/README"), STOP,
        result("b")]  # fmt: skip


async def mapped(lines: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    sent: list[tuple[str, dict[str, Any]]] = []

    async def emit(kind: str, payload: dict[str, Any]) -> None:
        sent.append((kind, payload))

    turn = ClaudeTurn(emit)
    for line in lines:
        await turn.feed(line)
    await turn.finish({"subtype": "success", "usage": {}}, cancelled=False)
    return [(kind, payload) for kind, payload in sent if kind.startswith("tool.invoke")]


@pytest.mark.parametrize("lines", [QUIET, BUSY], ids=["quiet", "busy"])
async def test_two_reads_of_one_message_are_one_group_and_each_result_follows_its_request(lines):
    sent = await mapped(lines)
    requests = [payload for kind, payload in sent if kind == "tool.invoke.request"]
    assert [r["invocation_id"] for r in requests] == ["a", "b"]
    group = requests[0].get("parallel_group_id")
    assert group is not None and requests[1].get("parallel_group_id") == group
    order = [(kind.rsplit(".", 1)[1], payload["invocation_id"]) for kind, payload in sent]
    assert sorted(order) == sorted(
        [("request", "a"), ("request", "b"), ("result", "a"), ("result", "b")]
    )
    for invocation in ("a", "b"):
        assert order.index(("request", invocation)) < order.index(("result", invocation))


async def test_a_result_of_a_message_already_stopped_is_not_held():
    """Once the message has stopped its requests are out: a later result goes at once."""
    sent = await mapped([START, tool_use("a", "/w/app.py"), STOP, result("a")])
    assert [kind for kind, _ in sent] == ["tool.invoke.request", "tool.invoke.result"]
    assert "parallel_group_id" not in sent[0][1]  # one tool is no group
