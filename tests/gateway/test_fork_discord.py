"""`/rawp fork` through Discord (issue 30 §2): the real `rawp gateway` process against the
fake Discord, a real master and client, and the real `claude` CLI against a fake Anthropic API.

A fork opens a new thread whose session continues a copy of the conversation (Claude Code
`--resume <id> --fork-session`) while the original thread goes on; only the owner forks."""

from __future__ import annotations

import json

from tests.agents.conftest import node_agents  # noqa: F401 - the fixture the stack needs
from tests.agents.fake_anthropic import Turn, text
from tests.fakes.discord_payloads import DiscordWorld
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

stack_and_model = claude_stack_fixture(OWNER)


async def command(fake: FakeDiscord, where: str, name: str, user=None) -> str:
    sent = await fake.inject_slash_command(
        "rawp", sub(name), channel_id=where, user_payload=user or WORLD.alice
    )
    webhook = f"/webhooks/{WORLD.application_id}/{sent['token']}"
    return content(await fake.wait_for_call("POST", webhook, timeout=60))


async def test_a_fork_goes_on_in_a_new_thread_with_a_copy_of_the_conversation(
    stack_and_model, processes, tmp_path
):
    stack, model = stack_and_model
    async with model, FakeDiscord(WORLD) as fake:
        start_discord_gateway(processes, stack, tmp_path, fake, WORLD)
        await discord_ready(fake)
        _, thread_id = await discord_start(fake, "claude")
        posts = f"/channels/{thread_id}/messages"
        model.script.append(Turn([text("noted: heron")]))
        await fake.inject_message("remember the word heron", channel_id=thread_id)
        await fake.wait_for_call("POST", posts, where=lambda c: "noted" in content(c), timeout=90)

        assert await command(fake, thread_id, "fork", user=WORLD.bob) == (
            "Only this session's owner can fork it."
        )
        said = await command(fake, thread_id, "fork")
        assert said.startswith("🍴 Forked"), said
        made = await fake.wait_for_call("POST", "/channels/*/threads", count=2, timeout=60)
        fork_thread = made.response["id"]
        assert fork_thread != thread_id
        model.script.append(Turn([text("the copy remembers")]))
        await fake.inject_message("which word?", channel_id=fork_thread)
        await fake.wait_for_call(
            "POST", f"/channels/{fork_thread}/messages",
            where=lambda c: "the copy remembers" in content(c), timeout=90,
        )  # fmt: skip
        assert "remember the word heron" in json.dumps(model.main_requests()[-1]["messages"])

        model.script.append(Turn([text("original here")]))  # the original thread goes on
        await fake.inject_message("still there?", channel_id=thread_id)
        await fake.wait_for_call(
            "POST", posts, where=lambda c: "original here" in content(c), timeout=90
        )
