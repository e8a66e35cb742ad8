"""`/rawp mode` through Discord (issue 30 §1): the real `rawp gateway` process against the fake
Discord, a real master and client, and the real `claude` CLI against a fake Anthropic API.

Only the owner changes the mode; the thread shows "Mode: plan" once the agent says so; the
CLI then runs in plan mode; after a gateway restart the mode is still known, and shown once."""

from __future__ import annotations

from tests.agents.conftest import node_agents  # noqa: F401 - the fixture the stack needs
from tests.agents.fake_anthropic import Turn, text
from tests.fakes.discord_payloads import DiscordWorld, command_option
from tests.fakes.discord_server import FakeDiscord
from tests.gateway.chat_stack import (
    content,
    discord_ready,
    discord_start,
    start_discord_gateway,
    sub,
)
from tests.gateway.modes_support import claude_stack_fixture, plan_mode_reached

WORLD = DiscordWorld()
OWNER = f"discord:{WORLD.alice['id']}"

stack_and_model = claude_stack_fixture(OWNER)


async def mode_command(fake: FakeDiscord, thread_id: str, *option, user=None) -> str:
    """`/rawp mode [mode]` in the thread: the private reply's text."""
    options = [command_option("mode", option[0])] if option else []
    command = await fake.inject_slash_command(
        "rawp", sub("mode", *options), channel_id=thread_id, user_payload=user or WORLD.alice
    )
    webhook = f"/webhooks/{WORLD.application_id}/{command['token']}"
    return content(await fake.wait_for_call("POST", webhook, timeout=60))


async def test_the_owner_sets_plan_mode_and_it_survives_a_gateway_restart(
    stack_and_model, processes, tmp_path
):
    stack, model = stack_and_model
    async with model, FakeDiscord(WORLD) as fake:
        gateway = start_discord_gateway(processes, stack, tmp_path, fake, WORLD)
        await discord_ready(fake)
        _, thread_id = await discord_start(fake, "claude")
        posts = f"/channels/{thread_id}/messages"

        def mode_lines() -> list[str]:
            return [content(c) for c in fake.calls("POST", posts) if content(c).startswith("Mode")]

        refused = await mode_command(fake, thread_id, "plan", user=WORLD.bob)
        assert refused == "Only this session's owner or an approver can change its mode."
        assert "Asked the agent for mode `plan`" in await mode_command(fake, thread_id, "plan")
        await fake.wait_for_call("POST", posts, where=lambda c: content(c) == "Mode: plan")

        model.script.append(Turn([text("Here is a plan.")]))
        await fake.inject_message("plan the work", channel_id=thread_id)
        await fake.wait_for_call(
            "POST", posts, where=lambda c: "Here is a plan." in content(c), timeout=90
        )
        assert plan_mode_reached(model)  # the CLI started in the mode chosen from chat

        gateway.terminate()
        gateway.wait(timeout=30)
        identified = len(fake.calls("WS", "IDENTIFY"))
        start_discord_gateway(processes, stack, tmp_path, fake, WORLD)
        await fake.wait_for_call("WS", "IDENTIFY", count=identified + 1, timeout=60)
        await fake.wait_for_ready_client(timeout=60)
        assert await mode_command(fake, thread_id) == (
            "Mode: `plan`. Choose one with the mode command: `plan` | `ask` | `accept-edits`."
        )
        model.script.append(Turn([text("Still planning.")]))
        await fake.inject_message("go on", channel_id=thread_id)
        await fake.wait_for_call(
            "POST", posts, where=lambda c: "Still planning." in content(c), timeout=90
        )
        assert plan_mode_reached(model)
        assert mode_lines() == ["Mode: plan"]  # re-sent on revival, not shown again
