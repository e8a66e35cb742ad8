"""The mode buttons through Slack (issue 30 §1): the real `rawp gateway` process in Slack HTTP
mode against the fake Slack, a real master and client, the real `claude` CLI against a fake
Anthropic API.

The thread gets one "🎛 Agent mode" message with a Block Kit button per mode; a stranger's press
is refused with an ephemeral message and changes nothing; the owner's press switches the agent
and the message is updated (`style: primary` on the new mode); after a gateway restart the same
button still works and the message is not posted again."""

from __future__ import annotations

import json

from tests.agents.conftest import node_agents  # noqa: F401 - the fixture the stack needs
from tests.fakes.slack_payloads import SlackWorld
from tests.fakes.slack_server import FakeSlack
from tests.gateway.chat_stack import slack_start, slack_text, start_slack_gateway
from tests.gateway.modes_support import claude_stack_fixture

WORLD = SlackWorld()
OWNER = f"slack:{WORLD.team_id}:{WORLD.alice['id']}"
NOT_ALLOWED = "Only this session's owner or an approver can change its mode."

stack_and_model = claude_stack_fixture(OWNER)


def mode_buttons(call) -> dict[str, dict]:
    blocks = call.body.get("blocks") or []
    blocks = json.loads(blocks) if isinstance(blocks, str) else blocks
    return {
        element["text"]["text"]: element
        for block in blocks
        if block.get("type") == "actions"
        for element in block["elements"]
    }


def primary(call) -> list[str]:
    return [name for name, b in mode_buttons(call).items() if b.get("style") == "primary"]


async def test_mode_buttons_refuse_a_stranger_and_work_after_a_gateway_restart(
    stack_and_model, processes, tmp_path
):
    stack, model = stack_and_model
    async with model, FakeSlack(WORLD) as slack:
        gateway, bolt = start_slack_gateway(processes, stack, tmp_path, slack, WORLD)
        _, thread_ts = await slack_start(slack, WORLD, bolt, "claude")

        def is_row(call) -> bool:
            return slack_text(call).startswith("🎛 Agent mode") and (
                call.body.get("thread_ts") == thread_ts
            )

        row = await slack.wait_for_call("chat.postMessage", where=is_row, timeout=90)
        assert set(mode_buttons(row)) == {"plan", "ask", "accept-edits"}
        message = {**row.body, "ts": row.response["ts"], "thread_ts": thread_ts}

        async def press(mode: str, user: dict) -> str:
            button = mode_buttons(row)[mode]
            click = WORLD.block_actions(
                button["action_id"],
                button["value"],
                message=message,
                block_id="rawp_modes",
                user=user,
            )

            def theirs(call) -> bool:
                return call.body.get("user") == user["id"]

            seen = len([c for c in slack.calls("chat.postEphemeral") if theirs(c)])
            await slack.post_interactive_to(bolt, click)
            answer = await slack.wait_for_call(
                "chat.postEphemeral", count=seen + 1, where=theirs, timeout=60
            )
            return slack_text(answer)

        def updated(mode: str):
            return lambda c: c.body.get("ts") == row.response["ts"] and primary(c) == [mode]

        async def posted(needle: str) -> None:
            await slack.wait_for_call(
                "chat.postMessage",
                where=lambda c: needle in slack_text(c) and c.body.get("thread_ts") == thread_ts,
                timeout=90,
            )

        assert await press("plan", WORLD.bob) == NOT_ALLOWED
        assert not [c for c in slack.calls("chat.update") if updated("plan")(c)]

        assert "Asked the agent for mode `plan`" in await press("plan", WORLD.alice)
        await posted("Mode: plan")
        await slack.wait_for_call("chat.update", where=updated("plan"), timeout=60)

        gateway.terminate()
        gateway.wait(timeout=30)
        gateway, bolt = start_slack_gateway(processes, stack, tmp_path, slack, WORLD)

        assert "Asked the agent for mode `accept-edits`" in await press("accept-edits", WORLD.alice)
        await posted("Mode: accept-edits")
        await slack.wait_for_call("chat.update", where=updated("accept-edits"), timeout=60)
        assert len([c for c in slack.calls("chat.postMessage") if is_row(c)]) == 1
