"""Discord settings from the environment (.env.example, "gateway" section).

The one place a Discord setting is written (runtime.settings explains how to add one). The
endpoints are configuration because real deployments change them: large bots put a shared
rate-limit proxy such as nirn-proxy in front of the REST API, and the tests point the real
client at a fake Discord through the same two settings. No flags: the gateway may serve
Discord and Slack at once, and the token must never show in a process list.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated

from pydantic import BeforeValidator, Field, SecretStr, model_validator
from pydantic_settings import NoDecode

from adapters.discord.shards import ShardIds, ShardPlan, parse_shard_count, parse_shard_ids
from runtime.settings import Accepts, AutoFlag, CommandSettings, IdSet, setting

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
    # Direct messages: None allows them only when nothing above is restricted (access.py).
    allow_dms: AutoFlag = setting(
        None,
        env="DISCORD_ALLOW_DMS",
        help="direct messages: none allows them only when no guild, channel or role list is set; "
        "1 allows them whatever the lists say; 0 refuses them",
    )
    # None: Discord's limit without boosts (adapters.discord.platform LIMITS).
    max_upload_bytes: Annotated[
        int | None, Field(gt=0), Accepts("a whole number of bytes above 0")
    ] = setting(
        None,
        env="DISCORD_MAX_UPLOAD_BYTES",
        help="the largest file the bot uploads; none: 10485760 (10 MiB, a server without "
        "boosts); a boosted server takes more",
    )
    # Sharding across replicas (adapters.discord.shards states the rules; docs/discord.md).
    shard_count: Annotated[
        int | None,
        Field(ge=1),
        BeforeValidator(parse_shard_count),
        Accepts("a number of shards ≥ 1, or auto (Discord's recommendation)"),
    ] = setting(
        1,
        env="DISCORD_SHARD_COUNT",
        help="how many shards the bot's guilds are split over, across all replicas; auto asks "
        "Discord (then this replica runs them all)",
    )
    shard_ids: Annotated[
        ShardIds,
        NoDecode,  # "0,1" is ours to parse, not JSON
        BeforeValidator(parse_shard_ids),
        Accepts("all, none, auto, or comma-separated shard ids below DISCORD_SHARD_COUNT"),
    ] = setting(
        "all",
        env="DISCORD_SHARD_IDS",
        help="the shards this replica runs; none: it only renders and posts (no gateway "
        "connection); auto: the replicas share them through Redis leases (needs "
        "RAWP_REDIS_URL); the replica running shard 0 syncs the slash commands",
    )

    @model_validator(mode="after")
    def _shards_exist(self) -> DiscordSettings:
        ShardPlan.of(self.shard_count, self.shard_ids)  # one line naming both settings
        return self

    @property
    def shard_plan(self) -> ShardPlan:
        return ShardPlan.of(self.shard_count, self.shard_ids)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> DiscordSettings:
        """From `env` (default: the process environment); a bad or missing value raises
        `runtime.settings.SettingError` (a ValueError) naming the variable."""
        return cls.from_environment(environ=env)
