"""The mode buttons through Discord (issue 30 §1): the real `rawp gateway` process against the
fake Discord, a real master and client, and the real `claude` CLI against a fake Anthropic API.

The agent announces its modes, so the thread gets one "🎛 Agent mode" message with a button per
mode; a stranger's press is refused privately and changes nothing; the owner's press switches
the agent, and the buttons are edited to mark the new mode; after a gateway restart the same
buttons still work, answered by the revived session, and the message is not posted again."""

from __future__ import annotations

from tests.agents.conftest import node_agents  # noqa: F401 - the fixture the stack needs
from tests.fakes.discord_payloads import DiscordWorld
from tests.fakes.discord_server import FakeDiscord
from tests.gateway.chat_stack import (
    buttons,
    content,
    discord_ready,
    discord_start,
    start_discord_gateway,
)
from tests.gateway.modes_support import claude_stack_fixture

WORLD = DiscordWorld()
OWNER = f"discord:{WORLD.alice['id']}"
PRIMARY, SECONDARY = 1, 2  # Discord's button styles

stack_and_model = claude_stack_fixture(OWNER)


def styles(call) -> dict[str, int]:
    return {b["label"]: b["style"] for b in buttons(call)}


async def press(fake: FakeDiscord, message: dict, mode: str, user: dict) -> tuple[str, dict]:
    """Press the `mode` button as `user`: (the private answer's text, its body)."""
    click = await fake.inject_button(f"rawp:mode:{mode}", message=message, user_payload=user)
    webhook = f"/webhooks/{WORLD.application_id}/{click['token']}"
    answer = await fake.wait_for_call("POST", webhook, timeout=60)
    return content(answer), answer.body


async def test_mode_buttons_refuse_a_stranger_and_work_after_a_gateway_restart(
    stack_and_model, processes, tmp_path
):
    stack, model = stack_and_model
    async with model, FakeDiscord(WORLD) as fake:
        gateway = start_discord_gateway(processes, stack, tmp_path, fake, WORLD)
        await discord_ready(fake)
        _, thread_id = await discord_start(fake, "claude")
        posts = f"/channels/{thread_id}/messages"

        def is_row(call) -> bool:
            return content(call).startswith("🎛 Agent mode")

        row = await fake.wait_for_call("POST", posts, where=is_row, timeout=90)
        assert set(styles(row)) == {"plan", "ask", "accept-edits"}
        assert all(b["custom_id"] == f"rawp:mode:{b['label']}" for b in buttons(row))
        message = row.response
        edits = f"{posts}/{message['id']}"

        text, body = await press(fake, message, "plan", WORLD.bob)
        assert text == "Only this session's owner or an approver can change its mode."
        assert body["flags"] & 64  # ephemeral: only bob sees it
        assert not [c for c in fake.calls("POST", posts) if content(c) == "Mode: plan"]

        text, _ = await press(fake, message, "plan", WORLD.alice)
        assert "Asked the agent for mode `plan`" in text
        await fake.wait_for_call("POST", posts, where=lambda c: content(c) == "Mode: plan")
        marked = await fake.wait_for_call(
            "PATCH", edits, where=lambda c: styles(c).get("plan") == PRIMARY, timeout=60
        )
        assert styles(marked)["ask"] == SECONDARY
        assert "`plan`" in content(marked)

        gateway.terminate()
        gateway.wait(timeout=30)
        identified = len(fake.calls("WS", "IDENTIFY"))
        start_discord_gateway(processes, stack, tmp_path, fake, WORLD)
        await fake.wait_for_call("WS", "IDENTIFY", count=identified + 1, timeout=60)
        await fake.wait_for_ready_client(timeout=60)

        text, _ = await press(fake, message, "accept-edits", WORLD.alice)  # the old button
        assert "Asked the agent for mode `accept-edits`" in text
        await fake.wait_for_call(
            "POST", posts, where=lambda c: content(c) == "Mode: accept-edits", timeout=60
        )
        await fake.wait_for_call(
            "PATCH", edits, where=lambda c: styles(c).get("accept-edits") == PRIMARY, timeout=60
        )
        assert len([c for c in fake.calls("POST", posts) if is_row(c)]) == 1  # never re-posted
