"""A real DiscordBot (adapters.discord) logged in to the fake Discord, and recording hooks."""

from __future__ import annotations

import contextlib

from adapters.discord import DiscordBot, DiscordSettings
from tests.fakes.discord_server import FakeDiscord, discord_endpoints


def settings_for(fake: FakeDiscord, **allowed) -> DiscordSettings:
    return DiscordSettings(
        bot_token=fake.world.bot_token,
        api_base_url=fake.api_base_url,
        gateway_url=fake.gateway_url,
        **allowed,
    )


@contextlib.asynccontextmanager
async def running_bot(fake: FakeDiscord, hooks=None, **allowed):
    """The bot past on_ready; discord.py's process-wide endpoints restored afterwards."""
    with discord_endpoints(fake):
        bot = DiscordBot(settings_for(fake, **allowed), hooks, guild_ready_timeout=0.05)
        await bot.run_in_background(ready_timeout=15)
        try:
            yield bot
        finally:
            await bot.close()
