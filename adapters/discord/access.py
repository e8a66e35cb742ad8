"""Who may use the bot where: allowed guilds, channels and roles (issue 10 "Access control").

Each list is optional; an empty list allows everything on that axis. A thread counts as its
parent channel, so allowing `#rawp` allows every session thread under it. Everyone else is
refused politely (an ephemeral message where the platform can show one).

Direct messages (no guild, so no channel or role to check; decision, docs/discord.md):
`allow_dms` None (DISCORD_ALLOW_DMS unset) allows them exactly when no guild, channel or role
is restricted — a bot open to everyone is open in DMs too, a restricted one is not; True
allows them whatever the lists say (any user who can DM the bot); False refuses them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

REFUSAL = "Sorry — this bot is not available to you here. Ask an admin to add you."


@dataclass(frozen=True, slots=True)
class Where:
    """The platform-neutral facts access depends on."""

    guild_id: str | None
    channel_ids: tuple[str, ...]  # the channel, and its parent when it is a thread
    role_ids: frozenset[str]


@dataclass(frozen=True)
class AccessPolicy:
    allowed_guilds: frozenset[str] = frozenset()
    allowed_channels: frozenset[str] = frozenset()
    allowed_roles: frozenset[str] = frozenset()
    allow_dms: bool | None = None

    def allows(self, where: Where) -> bool:
        if where.guild_id is None:  # a direct message: every guild channel has a guild
            if self.allow_dms is not None:
                return self.allow_dms
            return not (self.allowed_guilds or self.allowed_channels or self.allowed_roles)
        if self.allowed_guilds and where.guild_id not in self.allowed_guilds:
            return False
        if self.allowed_channels and not self.allowed_channels.intersection(where.channel_ids):
            return False
        return not self.allowed_roles or bool(self.allowed_roles & where.role_ids)


def where_of(guild_id: int | None, channel_ids: Iterable[int | None], role_ids: Iterable[int]):
    return Where(
        None if guild_id is None else str(guild_id),
        tuple(str(c) for c in channel_ids if c is not None),
        frozenset(str(r) for r in role_ids),
    )


def where_discord(guild_id, channel, member) -> Where:
    """The facts of a Discord message or interaction (channel may be a thread)."""
    import discord  # kept local: the policy above is plain data

    channel_ids = [getattr(channel, "id", None)]
    if isinstance(channel, discord.Thread):
        channel_ids.append(channel.parent_id)
    roles = [role.id for role in getattr(member, "roles", [])]
    return where_of(guild_id, channel_ids, roles)
