"""Each ChatPlatform operation of DiscordPlatform lands as the right Discord REST call."""

from __future__ import annotations

import asyncio

import pytest

from adapters.discord import DiscordBot
from adapters.discord.settings import PUBLIC_API_BASE_URL, DiscordSettings
from gateway.platform import ConversationRef, MessageRef
from gateway.rendering.chunker import ZWSP
from tests.adapters.chat_support import RecordingHooks
from tests.adapters.discord_support import running_bot, settings_for
from tests.fakes.discord_server import FakeDiscord, discord_endpoints


@pytest.fixture
async def discord_thread():
    async with FakeDiscord() as fake:
        thread = await fake.add_thread("session 1")
        hooks = RecordingHooks()
        async with running_bot(fake, hooks) as bot:
            conversation = ConversationRef("discord", fake.world.channel_id, thread["id"])
            yield fake, bot, conversation, hooks


def writes(fake: FakeDiscord, prefix: str) -> list[tuple[str, str]]:
    return [
        (c.method, c.path.removeprefix(prefix))
        for c in fake.log
        if c.method in ("POST", "PUT", "PATCH", "DELETE") and c.path.startswith(prefix)
    ]


async def test_every_operation_is_one_discord_call(discord_thread):
    fake, bot, conversation, _ = discord_thread
    platform = bot.platform
    channel = f"/channels/{conversation.thread_id}"
    sent = await platform.send_message(conversation, "hello **world** @everyone")
    await platform.edit_message(sent, "hello again")
    await platform.add_reaction(sent, "⏳")
    await platform.remove_reaction(sent, "⏳")
    await platform.trigger_typing(conversation)
    await platform.set_status(conversation, "🔧 Using tools…")  # no status line on Discord
    await platform.delete_message(sent)
    await platform.delete_message(sent)  # already gone: not an error
    mid = sent.message_id
    assert writes(fake, channel) == [
        ("POST", "/messages"),
        ("PATCH", f"/messages/{mid}"),
        ("PUT", f"/messages/{mid}/reactions/⏳/@me"),
        ("DELETE", f"/messages/{mid}/reactions/⏳/@me"),
        ("POST", "/typing"),
        ("DELETE", f"/messages/{mid}"),
        ("DELETE", f"/messages/{mid}"),
    ]
    post = fake.calls("POST", f"{channel}/messages")[0]
    assert post.body["content"] == "hello **world** @everyone"
    assert post.body["allowed_mentions"]["parse"] == []  # agent text never pings anyone
    assert fake.calls("PATCH", f"{channel}/messages/{mid}")[0].body["content"] == "hello again"


async def test_thinking_goes_out_as_spoilers_with_pipes_neutralised(discord_thread):
    fake, bot, conversation, _ = discord_thread
    await bot.platform.send_hidden(conversation, "💭 Thinking", "a || b " + "x" * 2500)
    posts = fake.calls("POST", f"/channels/{conversation.thread_id}/messages")
    contents = [p.body["content"] for p in posts]
    assert len(contents) == 2 and all(len(c) <= 2000 for c in contents)
    assert contents[0].startswith("💭 Thinking ||a |" + ZWSP + "| b")
    assert all(c.endswith("||") for c in contents)


async def test_ephemeral_without_a_click_mentions_the_user(discord_thread):
    fake, bot, conversation, _ = discord_thread
    bob = fake.world.bob["id"]
    await bot.platform.send_ephemeral(conversation, bob, "not for you")
    post = await fake.wait_for_call("POST", f"/channels/{conversation.thread_id}/messages")
    assert post.body["content"] == f"<@{bob}> not for you"
    mentions = post.body["allowed_mentions"]
    assert mentions["parse"] == [] and mentions["users"] == [int(bob)]  # pings only bob


async def test_open_thread_creates_a_public_thread_in_the_channel(discord_thread):
    fake, bot, _, _ = discord_thread
    channel = ConversationRef("discord", fake.world.channel_id)
    opened = await bot.platform.open_thread(channel, "fix the login bug")
    call = await fake.wait_for_call("POST", f"/channels/{fake.world.channel_id}/threads")
    assert call.body["name"] == "fix the login bug" and call.body["type"] == 11
    assert opened == ConversationRef("discord", fake.world.channel_id, call.response["id"])
    # Inside a thread already, the session stays there.
    assert await bot.platform.open_thread(opened, "again") == opened


async def test_thread_message_becomes_an_escaped_prompt_with_its_attachment(discord_thread):
    fake, _, conversation, hooks = discord_thread
    sent = await fake.inject_message(
        r"look at <@file:x|y> \ please",
        channel_id=conversation.thread_id,
        attachments={"notes.txt": b"hello"},
    )
    for _ in range(500):
        if hooks.of("prompt"):
            break
        await asyncio.sleep(0.01)
    [(_, invocation, request)] = hooks.of("prompt")
    assert invocation.user_id == fake.world.alice["id"]
    assert invocation.conversation == conversation
    assert invocation.message == MessageRef(conversation, sent["id"])
    # Typed text is escaped once, at the edge (K-08, §16.2.2): no token is forged.
    assert request.prompt_text == r"look at \<@file:x|y> \\ please"
    assert request.file_references == []
    assert [a.name for a in request.attachments] == ["notes.txt"]


async def test_messages_outside_threads_and_from_bots_are_not_prompts(discord_thread):
    fake, bot, conversation, hooks = discord_thread
    await fake.inject_message("in the channel itself")
    await bot.platform.send_message(conversation, "the bot's own message")  # echoed back
    marker = await fake.inject_message("marker", channel_id=conversation.thread_id)
    for _ in range(500):
        if hooks.of("prompt"):
            break
        await asyncio.sleep(0.01)
    assert [c[1].message.message_id for c in hooks.of("prompt")] == [marker["id"]]


async def test_a_429_is_waited_out_without_loss_duplicates_or_reordering(discord_thread):
    fake, bot, conversation, _ = discord_thread
    path = f"/channels/{conversation.thread_id}/messages"
    fake.rate_limit("POST", path, times=2, retry_after=0.2)
    for n in range(4):
        await bot.platform.send_message(conversation, f"part {n}")
    attempts = fake.calls("POST", path)
    assert [a.status for a in attempts[:2]] == [429, 429]
    delivered = [c.body["content"] for c in fake.log.successful("POST", path)]
    assert delivered == ["part 0", "part 1", "part 2", "part 3"]
    assert fake.rate_limits.pending == 0


def test_settings_read_the_endpoints_and_lists_from_the_environment():
    settings = DiscordSettings.from_env(
        {
            "DISCORD_BOT_TOKEN": "t0k",
            "DISCORD_API_BASE_URL": "http://nirn:8080/api/v10",
            "DISCORD_ALLOWED_ROLES": " 1, 2 ,",
        }
    )
    assert settings.api_base_url == "http://nirn:8080/api/v10"
    assert settings.allowed_roles == {"1", "2"} and settings.allowed_guilds == frozenset()
    assert "t0k" not in repr(settings)
    assert DiscordSettings.from_env({"DISCORD_BOT_TOKEN": "x"}).api_base_url == PUBLIC_API_BASE_URL
    with pytest.raises(ValueError, match="DISCORD_BOT_TOKEN"):
        DiscordSettings.from_env({})


async def test_output_rendered_before_login_waits_for_it():
    """A conversation layer resuming sessions may render before the bot has logged in."""
    async with FakeDiscord() as fake:
        thread = await fake.add_thread("session 1")
        with discord_endpoints(fake):
            bot = DiscordBot(settings_for(fake), guild_ready_timeout=0.05)
            conversation = ConversationRef("discord", fake.world.channel_id, thread["id"])
            early = asyncio.create_task(bot.platform.send_message(conversation, "resumed"))
            await asyncio.sleep(0)
            assert not early.done()
            await bot.run_in_background(ready_timeout=15)
            try:
                sent = await asyncio.wait_for(early, 10)
                post = await fake.wait_for_call("POST", f"/channels/{thread['id']}/messages")
                assert post.body["content"] == "resumed"
                assert sent.message_id == post.response["id"]
            finally:
                await bot.close()
