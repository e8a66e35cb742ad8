"""`/rawp resume` through Discord (issue 30 §2): the real `rawp gateway` process against the
fake Discord, a real master and client, and an ACP agent that offers `session/load`.

A session that ended — and whose client restarted since — goes on in the same thread: a new
session on the same node and agent, bound to the thread, whose agent loaded the old
conversation. Only the owner (or an approver) may resume; an open session is not resumed."""

from __future__ import annotations

import asyncio

from tests.fakes.discord_payloads import DiscordWorld, command_option
from tests.fakes.discord_server import FakeDiscord
from tests.gateway.chat_stack import content, discord_ready, start_discord_gateway, sub
from tests.gateway.resume_support import resume_stack_fixture

WORLD = DiscordWorld()
OWNER = f"discord:{WORLD.alice['id']}"

stack = resume_stack_fixture(OWNER)


async def command(fake: FakeDiscord, where: str, name: str, *options, user=None) -> str:
    """`/rawp <name> …` in `where`: the private reply's text."""
    sent = await fake.inject_slash_command(
        "rawp", sub(name, *options), channel_id=where, user_payload=user or WORLD.alice
    )
    webhook = f"/webhooks/{WORLD.application_id}/{sent['token']}"
    return content(await fake.wait_for_call("POST", webhook, timeout=60))


async def test_an_ended_session_resumes_in_its_thread_after_a_client_restart(
    stack, processes, tmp_path
):
    async with FakeDiscord(WORLD) as fake:
        start_discord_gateway(processes, stack, tmp_path, fake, WORLD)
        await discord_ready(fake)
        options = (command_option("node", "test-box"), command_option("agent", "keeper"))
        await command(fake, WORLD.channel_id, "start", *options)
        made = await fake.wait_for_call("POST", "/channels/*/threads", timeout=60)
        thread_id = made.response["id"]
        posts = f"/channels/{thread_id}/messages"
        await fake.inject_message("remember heron", channel_id=thread_id)
        await fake.wait_for_call("POST", posts, where=lambda c: "noted" in content(c), timeout=90)

        assert (await command(fake, thread_id, "resume")).startswith("This session is still open")
        await command(fake, thread_id, "end")
        await asyncio.to_thread(stack.stop_client)  # the agent's id must outlive the client
        await asyncio.to_thread(stack.start_client, "--agents-file", str(stack.agents_file))

        refused = await command(fake, thread_id, "resume", user=WORLD.bob)
        assert refused == "Only this session's owner or an approver can resume it."
        said = await command(fake, thread_id, "resume")
        assert said.startswith("🔁 Resumed"), said
        await fake.inject_message("which word?", channel_id=thread_id)
        answer = await fake.wait_for_call(
            "POST", posts, where=lambda c: "[loaded: fake-session-1]" in content(c), timeout=90
        )
        assert "noted" in content(answer)  # the resumed agent answered in the same thread
