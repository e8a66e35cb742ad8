"""`/rawp schedule …` and `/rawp schedules` through Discord (issue 30 §5): the real `rawp
gateway` process against the fake Discord, a real master and client.

A schedule made in a session thread takes the session's node and agent; the master keeps it;
its owner lists, pauses, resumes and deletes it, and nobody else sees or changes it; bad input
gets the usage line or the master's message."""

from __future__ import annotations

import re

from tests.fakes.discord_payloads import DiscordWorld, command_option
from tests.fakes.discord_server import FakeDiscord
from tests.gateway.chat_stack import (
    content,
    discord_ready,
    discord_start,
    module_stack,
    start_discord_gateway,
    sub,
)

WORLD = DiscordWorld()
OWNER = f"discord:{WORLD.alice['id']}"

stack = module_stack("schedules-discord", OWNER)


async def command(fake: FakeDiscord, where: str, name: str, *options, user=None) -> str:
    sent = await fake.inject_slash_command(
        "rawp", sub(name, *options), channel_id=where, user_payload=user or WORLD.alice
    )
    webhook = f"/webhooks/{WORLD.application_id}/{sent['token']}"
    return content(await fake.wait_for_call("POST", webhook, timeout=60))


async def schedule(fake: FakeDiscord, where: str, text: str, user=None) -> str:
    return await command(fake, where, "schedule", command_option("text", text), user=user)


async def test_schedules_are_made_listed_paused_and_deleted_from_discord(
    stack, processes, tmp_path
):
    async with FakeDiscord(WORLD) as fake:
        start_discord_gateway(processes, stack, tmp_path, fake, WORLD)
        await discord_ready(fake)
        channel = WORLD.channel_id
        said = await schedule(fake, channel, '"every day 9:00" too early')
        assert said.startswith("❌ Start a session first"), said

        _, thread = await discord_start(fake)
        said = await schedule(fake, thread, "“every weekday 9:00” summarise yesterday's commits")
        assert said.startswith("⏰ Scheduled `") and "`0 9 * * 1-5` (UTC)" in said, said
        assert "agent demo" in said
        schedule_id = re.search(r"Scheduled `([0-9a-f-]+)`", said).group(1)

        refused = await schedule(fake, thread, '"every day 8:00" mine now', user=WORLD.bob)
        assert refused == "❌ Only this session's owner can schedule prompts from its thread."
        bad = await schedule(fake, thread, '"every fortnight 9:00" hello')
        assert bad.startswith("❌") and "INVALID_SCHEDULE" in bad and "every weekday" in bad
        assert (await schedule(fake, thread, "every day 9:00 hello")).startswith("❌ Use `schedule")

        listed = await command(fake, channel, "schedules")
        assert schedule_id in listed and "summarise yesterday's commits" in listed, listed
        others = await command(fake, channel, "schedules", user=WORLD.bob)
        assert others.startswith("No schedules yet")
        stranger = await schedule(fake, channel, f"pause {schedule_id}", user=WORLD.bob)
        assert "SCHEDULE_NOT_FOUND" in stranger

        assert (await schedule(fake, channel, f"pause {schedule_id}")).endswith("paused.")
        assert "— paused" in await command(fake, channel, "schedules")
        assert "resumed; next run" in await schedule(fake, channel, f"resume {schedule_id}")
        said = await schedule(fake, channel, f"delete {schedule_id}")
        assert said == f"🗑 Deleted schedule `{schedule_id}`."
        assert (await command(fake, channel, "schedules")).startswith("No schedules yet")
