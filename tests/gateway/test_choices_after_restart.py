"""The mode and the model chosen from chat survive a restart of the client (issue 30: "a mode
… survives a restart of every process"). A client restart ends the agent with it, so its
session ends; `/rawp resume` continues the conversation in the same thread, and the new
session runs in the mode and on the model chosen for the old one — the real `claude` CLI
against the fake Anthropic API shows both in its next request. (The gateway's restart is
tests/gateway/test_modes_discord.py and test_models_discord.py; the master's leaves the
agent running: the session reattaches as it was.)"""

from __future__ import annotations

import asyncio

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


async def command(fake: FakeDiscord, where: str, name: str, *options) -> str:
    """`/rawp <name> …` from Alice of this module's WORLD: the private reply's text."""
    sent = await fake.inject_slash_command(
        "rawp", sub(name, *options), channel_id=where, user_payload=WORLD.alice
    )
    webhook = f"/webhooks/{WORLD.application_id}/{sent['token']}"
    return content(await fake.wait_for_call("POST", webhook, timeout=60))


async def test_mode_and_model_go_on_after_a_client_restart_and_resume(
    stack_and_model, processes, tmp_path
):
    stack, model = stack_and_model
    async with model, FakeDiscord(WORLD) as fake:
        start_discord_gateway(processes, stack, tmp_path, fake, WORLD)
        await discord_ready(fake)
        _, thread_id = await discord_start(fake, "claude")
        posts = f"/channels/{thread_id}/messages"

        async def said(words: str) -> None:
            await fake.wait_for_call("POST", posts, where=lambda c: words in content(c), timeout=90)

        await command(fake, thread_id, "mode", command_option("mode", "plan"))
        await said("Mode: plan")
        await command(fake, thread_id, "model", command_option("model", "opus"))
        await said("Model: opus")
        model.script.append(Turn([text("A first plan.")]))
        await fake.inject_message("plan the work", channel_id=thread_id)
        await said("A first plan.")

        await command(fake, thread_id, "end")
        await asyncio.to_thread(stack.stop_client)  # the agent ends with its client
        agents_file = str(tmp_path / "agents.toml")  # claude_stack_fixture's
        await asyncio.to_thread(stack.start_client, "--agents-file", agents_file)
        answer = await command(fake, thread_id, "resume")
        assert answer.startswith("🔁 Resumed"), answer
        assert "still in mode `plan` and model `opus`" in answer

        model.script.append(Turn([text("The plan, continued.")]))
        await fake.inject_message("go on", channel_id=thread_id)
        await said("The plan, continued.")
        request = model.main_requests()[-1]
        assert plan_mode_reached(model)  # the resumed CLI started in plan mode
        assert "opus" in request["model"]  # and on the model chosen before the restart
        assert "A first plan." in str(request["messages"])  # with its own memory
