"""Start where people talk, through Discord (issue 16 §1): a real master and client (processes,
the demo agent), the conversation layer in this process with the real discord.py bot logged in
to the fake Discord. A mention in the channel opens a thread on that message and runs it; a DM
is a session in the DM itself. Checked on the calls the bot made to the fake Discord."""

from __future__ import annotations

import pytest

from tests.adapters.discord_support import running_bot
from tests.fakes.discord_payloads import DiscordWorld
from tests.fakes.discord_server import FakeDiscord
from tests.gateway.chat_stack import content, conversation_service, module_stack

WORLD = DiscordWorld()
OWNER = f"discord:{WORLD.alice['id']}"


stack = module_stack("discord-start", OWNER)


@pytest.fixture
async def gateway(stack, tmp_path):
    """The fake Discord and the bot around a conversation service, as `rawp gateway` wires them."""
    async with (
        conversation_service(stack, tmp_path) as service,
        FakeDiscord(WORLD) as fake,
        running_bot(fake, service) as bot,
    ):
        service.bind_platform(bot.platform)
        yield fake, service


async def said(fake: FakeDiscord, channel_id: str, text: str):
    return await fake.wait_for_call(
        "POST", f"/channels/{channel_id}/messages", where=lambda c: text in content(c), timeout=30
    )


async def test_a_mention_in_the_channel_opens_a_thread_on_it_and_runs_it(gateway):
    fake, service = gateway
    mention = await fake.inject_mention("fix the failing test")

    made = await fake.wait_for_call(
        "POST", f"/channels/{WORLD.channel_id}/messages/{mention['id']}/threads", timeout=30
    )
    thread_id = made.response["id"]
    assert made.body["name"] == "demo on test-box"
    greeting = await said(fake, thread_id, "Every message in this thread is a prompt")
    answer = await said(fake, thread_id, 'You said: "fix the failing test"')
    assert "<@" not in content(answer)  # the mention left the prompt
    await fake.wait_for_call(
        "PUT",
        f"/channels/{WORLD.channel_id}/messages/{mention['id']}/reactions/✅/@me",
        timeout=30,
    )
    posted = fake.calls("POST", f"/channels/{thread_id}/messages")
    assert posted[0] is greeting
    # Nothing was said in the channel itself: the session lives in the thread.
    assert not fake.calls("POST", f"/channels/{WORLD.channel_id}/messages")

    # The thread goes on as any session thread: the next message there is a prompt.
    await fake.inject_message("and one more", channel_id=thread_id)
    await said(fake, thread_id, 'You said: "and one more"')
    assert await service.store.last_start(OWNER) is not None  # the user's default from now on


async def test_a_direct_message_is_a_session_in_the_dm(gateway):
    fake, service = gateway
    first = await fake.inject_dm("hello from a DM")
    # Every DM after the first is a prompt for the same session — also one sent while the
    # first is still starting it (starting rule 4).
    await fake.inject_dm("and again")
    dm_id = first["channel_id"]

    await said(fake, dm_id, "Every message here is a prompt")
    await said(fake, dm_id, 'You said: "hello from a DM"')
    await fake.wait_for_call(
        "PUT", f"/channels/{dm_id}/messages/{first['id']}/reactions/✅/@me", timeout=30
    )
    assert not fake.calls("POST", "/channels/*/threads")  # a DM has no threads
    await said(fake, dm_id, 'You said: "and again"')
    greetings = [
        c
        for c in fake.calls("POST", f"/channels/{dm_id}/messages")
        if "Every message here" in content(c)
    ]
    assert len(greetings) == 1
    assert len(service.live) == 1
