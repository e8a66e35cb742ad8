"""A real SlackBot (adapters.slack) against the fake Slack, in HTTP or Socket Mode."""

from __future__ import annotations

import contextlib

from adapters.slack import SlackBot, SlackSettings
from tests.fakes.slack_server import FakeSlack


def settings_for(fake: FakeSlack, mode: str = "http", **extra) -> SlackSettings:
    return SlackSettings(
        bot_token=fake.world.bot_token,
        app_token=fake.world.app_token,
        signing_secret=fake.world.signing_secret,
        api_base_url=fake.api_base_url,
        mode=mode,
        http_port=0,
        **extra,
    )


@contextlib.asynccontextmanager
async def running_app(fake: FakeSlack, hooks=None, mode: str = "http", **extra):
    bot = SlackBot(settings_for(fake, mode, **extra), hooks)
    await bot.start()
    try:
        if mode == "socket":
            await fake.wait_for_socket_client()
        yield bot
    finally:
        await bot.close()
