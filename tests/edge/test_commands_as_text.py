"""A denied command sent as `text` is refused like a slash command (issue 15 §2): a real master
started with `RAWP_EDGE_DENY_COMMANDS=review`, a real client, the demo agent (which publishes
`/review`), and an edge written here. The same refusal over every agent kind, with the real
`claude` CLI, is tests/agents/test_denied_commands.py."""

from __future__ import annotations

import pytest

from tests.edge.stack import demo_session, edge_for, frame, recv, recv_until, running_stack

OWNER = "discord:3003"


@pytest.fixture(scope="module")
def denying_stack(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAWP_EDGE_DENY_COMMANDS", "Review, /nuke")
        with running_stack(tmp_path_factory.mktemp("deny-stack"), OWNER) as made:
            yield made


async def _session(edge, stack):
    _, session_id, ws = await demo_session(edge, stack.root)
    assert [(await recv(ws))["type"], (await recv(ws))["type"]] == [
        "session.capabilities",
        "tool.catalog.publish",
    ]
    return session_id, ws


def _prompt(sid: str, text: str, input_type: str | None = None, **extra) -> str:
    payload = {"prompt_text": text, **extra}
    if input_type is not None:
        payload["input_type"] = input_type
    return frame("control.prompt.request", payload, sid)


async def test_a_denied_command_as_text_is_refused_and_no_turn_starts(denying_stack):
    refs = [{"ref_id": "ref_0", "path": "README.md"}]
    async with edge_for(denying_stack.master_url, OWNER) as edge:
        sid, ws = await _session(edge, denying_stack)
        denied = [
            _prompt(sid, "/review main", "text"),
            _prompt(sid, "/review main"),  # input_type omitted: `text`
            _prompt(sid, "\u200b /REVIEW", "text"),
            _prompt(sid, "//review", "something-else"),
            _prompt(sid, "<@file:ref_0|/review> now", "text", file_references=refs),
            _prompt(sid, "/nuke", "slash_command"),
        ]
        for text in denied:
            await ws.send(text)
            answer = await recv(ws)
            assert answer["type"] == "session.error", answer
            assert answer["payload"]["code"] == "PROMPT_REJECTED_BY_POLICY", answer
        # One socket's frames are handled in order: a refused prompt that had reached the client
        # would have started a turn before this one does.
        await ws.send(_prompt(sid, "/explain this", "text"))
        frames = await recv_until(ws, "session.turn.end")
        types = [f["type"] for f in frames]
        assert types.count("session.turn.start") == 1, types
        assert "session.error" not in types
        done = next(f for f in frames if f["type"] == "agent.text.done")
        assert "/explain this" in done["payload"]["text"]
