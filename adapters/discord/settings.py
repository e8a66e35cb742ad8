"""Discord settings from the environment (.env.example, "gateway" section).

The one place a Discord setting is written (rawp.settings explains how to add one). The
endpoints are configuration because real deployments change them: large bots put a shared
rate-limit proxy such as nirn-proxy in front of the REST API, and the tests point the real
client at a fake Discord through the same two settings. No flags: the gateway may serve
Discord and Slack at once, and the token must never show in a process list.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import SecretStr

from rawp.settings import CommandSettings, IdSet, setting

PUBLIC_API_BASE_URL = "https://discord.com/api/v10"
PUBLIC_GATEWAY_URL = "wss://gateway.discord.gg/"


class DiscordSettings(CommandSettings):
    bot_token: SecretStr = setting(
        ...,
        env="DISCORD_BOT_TOKEN",
        help="bot token from the Developer Portal → Bot (docs/discord.md); never commit it",
    )
    api_base_url: str = setting(
        PUBLIC_API_BASE_URL,
        env="DISCORD_API_BASE_URL",
        help="REST base URL; a shared rate-limit proxy (nirn-proxy) or, in tests, a fake",
    )
    gateway_url: str = setting(
        PUBLIC_GATEWAY_URL,
        env="DISCORD_GATEWAY_URL",
        help="gateway websocket URL (discord.py adds ?v=10&encoding=json itself)",
    )
    allowed_guilds: IdSet = setting(
        frozenset(),
        env="DISCORD_ALLOWED_GUILDS",
        help="guild ids allowed to use the bot; none: all",
    )
    allowed_channels: IdSet = setting(
        frozenset(),
        env="DISCORD_ALLOWED_CHANNELS",
        help="channel ids allowed to use the bot; none: all",
    )
    allowed_roles: IdSet = setting(
        frozenset(),
        env="DISCORD_ALLOWED_ROLES",
        help="role ids whose members may use the bot; none: all",
    )
    approver_roles: IdSet = setting(
        frozenset(),
        env="DISCORD_APPROVER_ROLES",
        help="role ids whose members may answer any approval, not only the turn's user (turns "
        "on the privileged Server Members intent, which must be enabled in the Developer Portal)",
    )

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> DiscordSettings:
        """From `env` (default: the process environment); a bad or missing value raises
        `rawp.settings.SettingError` (a ValueError) naming the variable."""
        return cls.from_environment(environ=env)
