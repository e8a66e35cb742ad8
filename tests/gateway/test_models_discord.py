"""`/rawp model` through Discord (issue 30 §1): the real `rawp gateway` process against the fake
Discord, a real master and client, and the real `claude` CLI against a fake Anthropic API.

The models the agent offers are autocompleted; only the owner changes the model; the thread
shows "Model: opus" once the agent says so; the fake API then gets requests for Opus; after a
gateway restart the model is still known, sent again, and not shown twice."""

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
from tests.gateway.modes_support import claude_stack_fixture

WORLD = DiscordWorld()
OWNER = f"discord:{WORLD.alice['id']}"
OFFERED = "`sonnet` | `opus` | `haiku` | `claude-rawp-test`"

stack_and_model = claude_stack_fixture(OWNER)


async def model_command(fake: FakeDiscord, thread_id: str, *option, user=None) -> str:
    """`/rawp model [model]` in the thread: the private reply's text."""
    options = [command_option("model", option[0])] if option else []
    command = await fake.inject_slash_command(
        "rawp", sub("model", *options), channel_id=thread_id, user_payload=user or WORLD.alice
    )
    webhook = f"/webhooks/{WORLD.application_id}/{command['token']}"
    return content(await fake.wait_for_call("POST", webhook, timeout=60))


async def test_the_owner_chooses_opus_and_it_survives_a_gateway_restart(
    stack_and_model, processes, tmp_path
):
    stack, model = stack_and_model
    async with model, FakeDiscord(WORLD) as fake:
        gateway = start_discord_gateway(processes, stack, tmp_path, fake, WORLD)
        await discord_ready(fake)
        _, thread_id = await discord_start(fake, "claude")
        posts = f"/channels/{thread_id}/messages"
        # The mode buttons come from the same `session.capabilities`, after its models are
        # stored (gateway.rendering.render): once they are there, the store knows the models.
        await fake.wait_for_call("POST", posts, where=lambda c: "Agent mode" in content(c))

        def model_lines() -> list[str]:
            return [content(c) for c in fake.calls("POST", posts) if content(c).startswith("Model")]

        refused = await model_command(fake, thread_id, "opus", user=WORLD.bob)
        assert refused == "Only this session's owner or an approver can change its model."
        assert await model_command(fake, thread_id) == (
            f"Model: `claude-rawp-test`. Choose one with the model command: {OFFERED}."
        )
        typed = sub("model", command_option("model", "op", focused=True))
        asked = await fake.inject_autocomplete("rawp", typed, channel_id=thread_id)
        answer = await fake.wait_for_interaction_answer(asked)
        assert answer.body["data"]["choices"] == [{"name": "opus", "value": "opus"}]

        assert await model_command(fake, thread_id, "gpt-9") == (
            f"❌ This agent offers {OFFERED}, not “gpt-9”."
        )
        assert "Asked the agent for model `opus`" in await model_command(fake, thread_id, "Opus")
        await fake.wait_for_call("POST", posts, where=lambda c: content(c) == "Model: opus")

        model.script.append(Turn([text("Deep answer.")]))
        await fake.inject_message("think hard", channel_id=thread_id)
        await fake.wait_for_call(
            "POST", posts, where=lambda c: "Deep answer." in content(c), timeout=90
        )
        assert "opus" in model.main_requests()[-1]["model"]  # the CLI started with --model

        gateway.terminate()
        gateway.wait(timeout=30)
        identified = len(fake.calls("WS", "IDENTIFY"))
        start_discord_gateway(processes, stack, tmp_path, fake, WORLD)
        await fake.wait_for_call("WS", "IDENTIFY", count=identified + 1, timeout=60)
        await fake.wait_for_ready_client(timeout=60)
        assert await model_command(fake, thread_id) == (
            f"Model: `opus`. Choose one with the model command: {OFFERED}."
        )
        model.script.append(Turn([text("Still deep.")]))
        await fake.inject_message("go on", channel_id=thread_id)
        await fake.wait_for_call(
            "POST", posts, where=lambda c: "Still deep." in content(c), timeout=90
        )
        assert "opus" in model.main_requests()[-1]["model"]
        assert model_lines() == ["Model: opus"]  # re-sent on revival, not shown again
