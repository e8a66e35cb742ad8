"""A session started from the terminal, picked up in Discord (issue 30 §2): the real `claude`
CLI is run on the machine outside RAWP (the HOME the client gives its claude agent, in the
workspace) against the fake Anthropic API; then, through the real `rawp gateway` against the
fake Discord, a real master and client, `/rawp resume` in the channel lists it, the `session`
option autocompletes it, and picking it opens a new thread whose session remembers the
conversation. Another user is offered nothing and picks up nothing."""

from __future__ import annotations

import json

from tests.agents.conftest import model_env, node_agents  # noqa: F401 - the fixture
from tests.agents.fake_anthropic import Turn, text
from tests.agents.terminal_support import claude_in_terminal
from tests.fakes.discord_payloads import DiscordWorld, command_option
from tests.fakes.discord_server import FakeDiscord
from tests.gateway.chat_stack import content, discord_ready, start_discord_gateway, sub
from tests.gateway.modes_support import claude_stack_fixture

WORLD = DiscordWorld()
OWNER = f"discord:{WORLD.alice['id']}"

stack_and_model = claude_stack_fixture(OWNER)


async def resume(fake: FakeDiscord, *options: dict, user=None) -> str:
    sent = await fake.inject_slash_command(
        "rawp", sub("resume", *options), channel_id=WORLD.channel_id,
        user_payload=user or WORLD.alice,
    )  # fmt: skip
    webhook = f"/webhooks/{WORLD.application_id}/{sent['token']}"
    return content(await fake.wait_for_call("POST", webhook, timeout=60))


async def choices(fake: FakeDiscord, typed: str, user=None) -> list[dict]:
    asked = await fake.inject_autocomplete(
        "rawp", sub("resume", command_option("session", typed, focused=True)),
        channel_id=WORLD.channel_id, user_payload=user or WORLD.alice,
    )  # fmt: skip
    answer = await fake.wait_for_interaction_answer(asked, timeout=30)
    return answer.body["data"]["choices"]


async def test_a_terminal_session_is_picked_up_from_discord(stack_and_model, processes, tmp_path):
    stack, model = stack_and_model
    async with model, FakeDiscord(WORLD) as fake:
        env = model_env(model.base_url, tmp_path / "home")  # the client's claude's HOME
        model.script.append(Turn([text("noted: kestrel")]))
        mine = await claude_in_terminal(
            stack.claude, env, stack.root / "src", "remember the word kestrel"
        )
        start_discord_gateway(processes, stack, tmp_path, fake, WORLD)
        await discord_ready(fake)

        listed = await resume(fake)
        assert f"1. `{mine[:8]}` remember the word kestrel — claude on test-box" in listed, listed
        offered = await choices(fake, "kestrel")
        assert len(offered) == 1 and offered[0]["value"].endswith(f":{mine}"), offered
        assert offered[0]["name"].startswith("remember the word kestrel — claude on test-box")

        # Another user is offered nothing, and naming Alice's conversation picks up nothing.
        assert await choices(fake, "", user=WORLD.bob) == []
        refused = await resume(fake, command_option("session", offered[0]["value"]), user=WORLD.bob)
        assert refused.startswith("No conversation"), refused

        picked = await resume(fake, command_option("session", offered[0]["value"]))
        assert picked.startswith(f"🔁 Picked up `{mine[:8]}`"), picked
        made = await fake.wait_for_call("POST", "/channels/*/threads", timeout=60)
        thread_id = made.response["id"]
        model.script.append(Turn([text("it was kestrel")]))
        await fake.inject_message("which word?", channel_id=thread_id)
        await fake.wait_for_call(
            "POST", f"/channels/{thread_id}/messages",
            where=lambda c: "it was kestrel" in content(c), timeout=90,
        )  # fmt: skip
        sent = json.dumps(model.main_requests()[-1]["messages"])
        assert "remember the word kestrel" in sent and "noted: kestrel" in sent
