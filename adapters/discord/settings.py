"""Discord settings from the environment (.env.example, "gateway" section).

The endpoints are configuration because real deployments change them: large bots put a shared
rate-limit proxy such as nirn-proxy in front of the REST API, and the tests point the real
client at a fake Discord through the same two settings.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from adapters.env import switch

PUBLIC_API_BASE_URL = "https://discord.com/api/v10"
PUBLIC_GATEWAY_URL = "wss://gateway.discord.gg/"


def id_set(raw: str | None) -> frozenset[str]:
    """`"1, 2,3"` → {"1", "2", "3"}; empty means "no restriction"."""
    return frozenset(part.strip() for part in (raw or "").split(",") if part.strip())


def byte_count(env: Mapping[str, str], name: str) -> int | None:
    """A positive whole number of bytes from `name`, or None when it is unset."""
    raw = (env.get(name) or "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) <= 0:
        raise ValueError(f"{name} must be a positive number of bytes, not {raw!r}")
    return int(raw)


@dataclass(frozen=True)
class DiscordSettings:
    bot_token: str = field(repr=False)  # never logged
    api_base_url: str = PUBLIC_API_BASE_URL
    gateway_url: str = PUBLIC_GATEWAY_URL
    allowed_guilds: frozenset[str] = frozenset()
    allowed_channels: frozenset[str] = frozenset()
    allowed_roles: frozenset[str] = frozenset()
    # Members of these roles may answer any approval, not only the turn's user.
    approver_roles: frozenset[str] = frozenset()
    # Direct messages: None allows them only when nothing above is restricted (access.py).
    allow_dms: bool | None = None
    # The largest file the bot uploads; None: Discord's limit without boosts (PLATFORM_LIMITS).
    max_upload_bytes: int | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> DiscordSettings:
        env = os.environ if env is None else env
        token = env.get("DISCORD_BOT_TOKEN", "")
        if not token:
            raise ValueError("DISCORD_BOT_TOKEN is not set")
        return cls(
            bot_token=token,
            api_base_url=env.get("DISCORD_API_BASE_URL") or PUBLIC_API_BASE_URL,
            gateway_url=env.get("DISCORD_GATEWAY_URL") or PUBLIC_GATEWAY_URL,
            allowed_guilds=id_set(env.get("DISCORD_ALLOWED_GUILDS")),
            allowed_channels=id_set(env.get("DISCORD_ALLOWED_CHANNELS")),
            allowed_roles=id_set(env.get("DISCORD_ALLOWED_ROLES")),
            approver_roles=id_set(env.get("DISCORD_APPROVER_ROLES")),
            allow_dms=switch(env.get("DISCORD_ALLOW_DMS"), "DISCORD_ALLOW_DMS"),
            max_upload_bytes=byte_count(env, "DISCORD_MAX_UPLOAD_BYTES"),
        )
