"""A too-large attachment in a Discord thread is refused before it is downloaded or sent, with
a reply that names the file and the limit (rawp.attachments, the one place limits live)."""

from __future__ import annotations

import asyncio

from gateway.platform import ConversationRef
from rawp.attachments import DEFAULT_LIMITS
from tests.adapters.chat_support import RecordingHooks
from tests.adapters.discord_support import running_bot
from tests.fakes.discord_server import FakeDiscord


async def test_an_oversize_attachment_is_refused_before_download_with_a_clear_reply():
    async with FakeDiscord() as fake:
        thread = await fake.add_thread("session 1")
        hooks = RecordingHooks()
        async with running_bot(fake, hooks):
            conversation = ConversationRef("discord", fake.world.channel_id, thread["id"])
            size = DEFAULT_LIMITS.max_bytes_each + 1
            await fake.inject_message(
                "look", channel_id=conversation.thread_id, attachments={"huge.png": b"x" * size}
            )
            reply = await fake.wait_for_call(
                "POST", f"/channels/{thread['id']}/messages", timeout=10
            )
            assert reply.body["content"] == (
                f"⚠️ huge.png is {size:,} bytes; an attachment may be at most "
                f"{DEFAULT_LIMITS.max_bytes_each:,} bytes"
            )
            await asyncio.sleep(0.05)
            assert not hooks.of("prompt")  # nothing was sent on
            assert not fake.calls("GET", "/attachments/**")  # nor downloaded
