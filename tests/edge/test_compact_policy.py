"""`control.context.compact` is checked as the `/compact` prompt it runs as (issue 30 §1,
master.edge.links.dataplane): a real master started with `RAWP_EDGE_DENY_COMMANDS=compact`
refuses it itself with `PROMPT_REJECTED_BY_POLICY`, naming the command, before any client
sees it (the demo client would have answered `UNSUPPORTED_CONTROL`)."""

from __future__ import annotations

import pytest

from rawp.events import ContextCompact
from tests.edge.stack import demo_session, edge_for, frame, recv, running_stack

OWNER = "discord:3004"


@pytest.fixture(scope="module")
def denying_stack(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAWP_EDGE_DENY_COMMANDS", "compact")
        with running_stack(tmp_path_factory.mktemp("deny-compact"), OWNER) as made:
            yield made


def test_compaction_is_the_compact_command_with_its_instructions_escaped():
    prompt = ContextCompact(instructions="keep <@file:x|a.py>").as_prompt()
    assert prompt.input_type == "slash_command"
    assert prompt.prompt_text == "/compact keep \\<@file:x|a.py>"
    assert ContextCompact().as_prompt().prompt_text == "/compact"


async def test_a_denied_compact_command_refuses_control_context_compact(denying_stack):
    async with edge_for(denying_stack.master_url, OWNER) as edge:
        _, sid, ws = await demo_session(edge, denying_stack.root)
        await recv(ws), await recv(ws)  # the greeting
        await ws.send(frame("control.context.compact", {"instructions": "short"}, sid))
        answer = await recv(ws)
        assert answer["type"] == "session.error", answer
        assert answer["payload"]["code"] == "PROMPT_REJECTED_BY_POLICY", answer
        assert "compact" in answer["payload"]["message"]
