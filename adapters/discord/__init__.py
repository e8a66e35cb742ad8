"""Discord as a chat platform for the gateway (docs/discord.md)."""

from adapters.discord.bot import DiscordBot, apply_endpoints
from adapters.discord.platform import DiscordPlatform
from adapters.discord.settings import DiscordSettings

__all__ = ["DiscordBot", "DiscordPlatform", "DiscordSettings", "apply_endpoints"]
