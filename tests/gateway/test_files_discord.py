"""End to end through Discord: the demo agent's `agent.file` frames cross a real client, master
and `rawp gateway` process and arrive in the thread as one uploaded attachment, bytes equal;
a file past the bot's upload limit (DISCORD_MAX_UPLOAD_BYTES) is one clear line instead."""

from __future__ import annotations

from client.demo_agent import demo_png, report_text
from tests.fakes.discord_payloads import DiscordWorld
from tests.fakes.discord_server import FakeDiscord
from tests.gateway.chat_stack import (
    content,
    discord_ready,
    discord_start,
    module_stack,
    start_discord_gateway,
)

WORLD = DiscordWorld()
OWNER = f"discord:{WORLD.alice['id']}"
LIMIT = 50_000  # the demo's `bigfile` PNG is about 100 KB, in four pieces


stack = module_stack("discord-files", OWNER)


async def test_files_the_agent_sends_are_uploaded_into_the_thread(stack, processes, tmp_path):
    assert len(demo_png()) > LIMIT
    async with FakeDiscord(WORLD) as discord_fake:
        start_discord_gateway(
            processes, stack, tmp_path, discord_fake, WORLD, DISCORD_MAX_UPLOAD_BYTES=str(LIMIT)
        )
        await discord_ready(discord_fake)
        _, thread_id = await discord_start(discord_fake)
        messages = f"/channels/{thread_id}/messages"
        await discord_fake.wait_for_call(
            "POST",
            messages,
            where=lambda c: "Every message in this thread" in content(c),
            timeout=30,
        )
        # One 429 on the thread's next post (a reply of the turn): it waits, it is not dropped.
        discord_fake.rate_limit("POST", messages, times=1, retry_after=0.2)

        prompt = "sendfile and bigfile please"
        sent = await discord_fake.inject_message(prompt, channel_id=thread_id)
        await discord_fake.wait_for_call(
            "PUT", f"{messages}/{sent['id']}/reactions/✅/@me", timeout=60
        )
        uploads = [u for u in discord_fake.rest.uploads if u["channel_id"] == thread_id]
        assert [(u["filename"], u["data"]) for u in uploads] == [
            ("report.txt", report_text(prompt))
        ]
        assert uploads[0]["size"] == len(report_text(prompt))
        # Messages by id: a post repeated under its nonce is the same message (Discord's de-dup).
        posted = {
            c.response["id"]: content(c) for c in discord_fake.log.successful("POST", messages)
        }
        lines = list(posted.values())
        too_large = [line for line in lines if line.startswith("📎 plot.png")]
        assert too_large == [
            f"📎 plot.png ({len(demo_png()) / 1024:.1f} KB) is larger than Discord allows "
            "(48.8 KB), so it was not uploaded."
        ]
        assert any(c.status == 429 for c in discord_fake.calls("POST", messages))
