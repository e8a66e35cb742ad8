"""Files the agent sends, uploaded by the real discord.py client to the fake Discord: one
multipart message per file, the bytes intact, a 429 waited out, a keyed repeat de-duplicated."""

from __future__ import annotations

import pytest

from adapters.discord.settings import DiscordSettings
from gateway.platform import ConversationRef
from tests.adapters.chat_support import RecordingHooks
from tests.adapters.discord_support import running_bot
from tests.fakes.discord_server import FakeDiscord

PNG = bytes(range(256)) * 40  # 10 KB, every byte value


@pytest.fixture
async def discord_thread():
    async with FakeDiscord() as fake:
        thread = await fake.add_thread("session 1")
        async with running_bot(fake, RecordingHooks()) as bot:
            yield fake, bot, ConversationRef("discord", fake.world.channel_id, thread["id"])


async def test_a_file_is_one_message_with_the_file_attached(discord_thread):
    fake, bot, conversation = discord_thread
    sent = await bot.platform.upload_file(conversation, "plot.png", "image/png", PNG)
    [upload] = fake.rest.uploads
    assert upload["filename"] == "plot.png" and upload["size"] == len(PNG)
    assert upload["data"] == PNG
    assert upload["channel_id"] == conversation.thread_id
    assert upload["message_id"] == sent.message_id
    [call] = fake.calls("POST", f"/channels/{conversation.thread_id}/messages")
    assert call.files == ("plot.png",)
    assert call.body["allowed_mentions"]["parse"] == []


async def test_a_429_on_an_upload_delays_it_and_a_keyed_repeat_is_not_a_second_file(
    discord_thread,
):
    fake, bot, conversation = discord_thread
    path = f"/channels/{conversation.thread_id}/messages"
    fake.rate_limit("POST", path, times=1, retry_after=0.2)
    first = await bot.platform.upload_keyed(conversation, "a.txt", "text/plain", b"abc", "m-1/0")
    again = await bot.platform.upload_keyed(conversation, "a.txt", "text/plain", b"abc", "m-1/0")
    assert [c.status for c in fake.calls("POST", path)] == [429, 200, 200]
    assert [u["data"] for u in fake.rest.uploads] == [b"abc"]  # the nonce made it one message
    assert again == first


def test_a_boosted_servers_limit_is_a_setting():
    env = {"DISCORD_BOT_TOKEN": "t", "DISCORD_MAX_UPLOAD_BYTES": "52428800"}
    assert DiscordSettings.from_env(env).max_upload_bytes == 50 * 1024 * 1024
    assert DiscordSettings.from_env({"DISCORD_BOT_TOKEN": "t"}).max_upload_bytes is None
    for bad in ("10MB", "0"):  # one line naming the variable and what it takes (runtime.settings)
        with pytest.raises(ValueError) as refused:
            DiscordSettings.from_env({**env, "DISCORD_MAX_UPLOAD_BYTES": bad})
        assert str(refused.value) == (
            f"DISCORD_MAX_UPLOAD_BYTES: expected a whole number of bytes above 0, got {bad!r}"
        )
