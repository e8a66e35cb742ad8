"""Discord JSON payloads shaped the way discord.py 2.x parses them.

Shapes follow discord/types/*.py and what discord/state.py parse_* and the model constructors
read with `data['key']` (required keys) — every required key is present here, optional ones only
where a test needs them. `DiscordWorld` is the little universe the fake serves: one application
with its bot user, one guild with a text channel, two roles and two human members, and the DM
channels the bot has with them (`dm_channel`). `add_guild` adds more guilds (each with its own
text channel, the same roles and members), placed on a chosen shard for the sharding tests:
Discord sends a guild's events on shard `(guild_id >> 22) % shard_count` (`shard_of`).
"""

from __future__ import annotations

import itertools
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

DISCORD_EPOCH_MS = 1420070400000

# Interaction and component type numbers (discord/types/interactions.py, components.py).
INTERACTION_APPLICATION_COMMAND = 2
INTERACTION_COMPONENT = 3
INTERACTION_AUTOCOMPLETE = 4
INTERACTION_MODAL_SUBMIT = 5
COMPONENT_BUTTON = 2
COMPONENT_STRING_SELECT = 3
CHANNEL_TEXT = 0
CHANNEL_DM = 1
CHANNEL_PUBLIC_THREAD = 11
ALL_PERMISSIONS = str((1 << 50) - 1)


def now_iso() -> str:
    return datetime.now(UTC).isoformat()


class Snowflakes:
    """Monotonic snowflake ids, so ordering by id equals ordering by creation like on Discord."""

    def __init__(self) -> None:
        base_ms = int(datetime.now(UTC).timestamp() * 1000) - DISCORD_EPOCH_MS
        self._counter = itertools.count(base_ms << 22)

    def next(self) -> str:
        # Step by 1<<12 so consecutive ids differ in the "increment" bits and stay unique.
        return str(next(self._counter) + (1 << 12))


def shard_of(guild_id: str | int, shard_count: int) -> int:
    """The shard a guild's events arrive on, by Discord's formula."""
    return (int(guild_id) >> 22) % shard_count


def user(user_id: str, username: str, *, bot: bool = False) -> dict[str, Any]:
    return {
        "id": user_id,
        "username": username,
        "discriminator": "0",
        "global_name": username.title(),
        "avatar": None,
        "bot": bot,
        "public_flags": 0,
    }


def member(user_payload: dict[str, Any], role_ids: list[str]) -> dict[str, Any]:
    return {
        "user": user_payload,
        "roles": role_ids,
        "joined_at": now_iso(),
        "deaf": False,
        "mute": False,
        "flags": 0,
        "nick": None,
    }


def role(role_id: str, name: str, position: int, permissions: str) -> dict[str, Any]:
    return {
        "id": role_id,
        "name": name,
        "color": 0,
        "hoist": False,
        "position": position,
        "permissions": permissions,
        "managed": False,
        "mentionable": False,
        "flags": 0,
    }


def text_channel(channel_id: str, guild_id: str, name: str) -> dict[str, Any]:
    return {
        "id": channel_id,
        "type": CHANNEL_TEXT,
        "guild_id": guild_id,
        "name": name,
        "position": 0,
        "permission_overwrites": [],
        "nsfw": False,
        "parent_id": None,
        "topic": None,
        "last_message_id": None,
        "rate_limit_per_user": 0,
    }


def thread_channel(
    thread_id: str, guild_id: str, parent_id: str, owner_id: str, name: str
) -> dict[str, Any]:
    return {
        "id": thread_id,
        "type": CHANNEL_PUBLIC_THREAD,
        "guild_id": guild_id,
        "parent_id": parent_id,
        "owner_id": owner_id,
        "name": name,
        "last_message_id": None,
        "rate_limit_per_user": 0,
        "message_count": 0,
        "member_count": 1,
        "flags": 0,
        "thread_metadata": {
            "archived": False,
            "auto_archive_duration": 1440,
            "archive_timestamp": now_iso(),
            "locked": False,
        },
    }


@dataclass
class DiscordWorld:
    """Ids and objects of the fake's test universe. Tests read ids from here."""

    ids: Snowflakes = field(default_factory=Snowflakes)
    bot_token: str = field(default_factory=lambda: "fake-bot-token-" + secrets.token_hex(8))
    # The application's flags (GET /oauth2/applications/@me): the Message Content intent is
    # switched on in the Developer Portal (GATEWAY_MESSAGE_CONTENT_LIMITED, 1 << 19), as the
    # bot needs; a test sets 0 to see `rawp doctor` name the missing intent.
    application_flags: int = 1 << 19
    # GET /gateway/bot `shards`: the count Discord recommends (DISCORD_SHARD_COUNT=auto).
    recommended_shards: int = 1
    # GET /gateway/bot `session_start_limit.max_concurrency`: IDENTIFYs allowed per 5 s.
    max_concurrency: int = 1

    def __post_init__(self) -> None:
        self.application_id = self.ids.next()
        self.bot_user = user(self.application_id, "rawp-bot", bot=True)
        self.owner_user = user(self.ids.next(), "owner")
        self.guild_id = self.ids.next()
        self.channel_id = self.ids.next()
        self.operator_role_id = self.ids.next()
        self.alice = user(self.ids.next(), "alice")
        self.bob = user(self.ids.next(), "bob")
        self.roles = self.roles_of(self.guild_id)
        self.guilds: dict[str, str] = {self.guild_id: "rawp test guild"}  # id → name
        self.members = {
            self.alice["id"]: member(self.alice, [self.operator_role_id]),
            self.bob["id"]: member(self.bob, []),
            self.application_id: member(self.bot_user, [self.operator_role_id]),
        }
        self.channels: dict[str, dict[str, Any]] = {
            self.channel_id: text_channel(self.channel_id, self.guild_id, "rawp"),
        }

    def roles_of(self, guild_id: str) -> list[dict[str, Any]]:
        return [
            role(guild_id, "@everyone", 0, "0"),  # @everyone shares the guild id
            role(self.operator_role_id, "rawp-operator", 1, ALL_PERMISSIONS),
        ]

    def add_guild(self, name: str, *, shard: int = 0, shard_count: int = 1) -> tuple[str, str]:
        """Another guild, its id chosen so it lands on `shard` of `shard_count`, with a text
        channel: (guild id, channel id). Its snowflake's timestamp bits are moved forward to
        the wanted shard; its low bits stay unique."""
        fresh = int(self.ids.next())
        stamp, low = fresh >> 22, fresh & ((1 << 22) - 1)
        stamp += (shard - stamp) % shard_count
        guild_id = str((stamp << 22) | low)
        channel_id = self.ids.next()
        self.guilds[guild_id] = name
        self.channels[channel_id] = text_channel(channel_id, guild_id, name)
        return guild_id, channel_id

    def guild_of(self, channel_id: str | None) -> str | None:
        """The guild a channel belongs to (None for a DM or an unknown channel)."""
        return self.channels.get(channel_id or "", {}).get("guild_id")

    def guilds_on(self, shard: int, shard_count: int) -> list[str]:
        return [g for g in self.guilds if shard_of(g, shard_count) == shard]

    # --- bootstrap payloads -------------------------------------------------------------

    def application_info(self) -> dict[str, Any]:
        """GET /oauth2/applications/@me (discord/appinfo.py AppInfo)."""
        return {
            "id": self.application_id,
            "name": "rawp-bot",
            "description": "fake application",
            "icon": None,
            "bot_public": False,
            "bot_require_code_grant": False,
            "owner": self.owner_user,
            "verify_key": "0" * 64,
            "flags": self.application_flags,
            "bot": self.bot_user,
        }

    def ready(
        self, session_id: str, resume_gateway_url: str, guild_ids: list[str] | None = None
    ) -> dict[str, Any]:
        """READY: guilds start unavailable and arrive later as GUILD_CREATE, as on Discord;
        `guild_ids`: the connection's shard's guilds (default: the test guild)."""
        return {
            "v": 10,
            "user": {**self.bot_user, "verified": True, "mfa_enabled": False, "flags": 0},
            "guilds": [
                {"id": g, "unavailable": True}
                for g in (guild_ids if guild_ids is not None else [self.guild_id])
            ],
            "session_id": session_id,
            "resume_gateway_url": resume_gateway_url,
            "application": {"id": self.application_id, "flags": 0},
            "private_channels": [],
            "relationships": [],
        }

    def guild_create(self, guild_id: str | None = None) -> dict[str, Any]:
        """GUILD_CREATE for a guild, default the test guild (discord/guild.py
        Guild._from_data), with its channels and threads."""
        guild_id = guild_id or self.guild_id
        mine = [c for c in self.channels.values() if c.get("guild_id") == guild_id]
        channels = [c for c in mine if c["type"] == CHANNEL_TEXT]
        threads = [c for c in mine if c["type"] == CHANNEL_PUBLIC_THREAD]
        return {
            "id": guild_id,
            "name": self.guilds.get(guild_id, "rawp test guild"),
            "icon": None,
            "owner_id": self.owner_user["id"],
            "unavailable": False,
            "large": False,
            "member_count": len(self.members),
            "roles": self.roles if guild_id == self.guild_id else self.roles_of(guild_id),
            "emojis": [],
            "stickers": [],
            "features": [],
            "channels": channels,
            "threads": threads,
            # As on Discord without the presence intent: only the bot's own member comes with
            # GUILD_CREATE; the others arrive by chunking (op 8, needs the members intent) or
            # with each message and interaction.
            "members": [self.members[self.application_id]],
            "presences": [],
            "voice_states": [],
            "stage_instances": [],
            "guild_scheduled_events": [],
            "soundboard_sounds": [],
            "joined_at": now_iso(),
            "verification_level": 0,
            "default_message_notifications": 0,
            "explicit_content_filter": 0,
            "mfa_level": 0,
            "nsfw_level": 0,
            "premium_tier": 0,
            "preferred_locale": "en-US",
            "system_channel_id": None,
        }

    def members_chunk(self, nonce: str | None, guild_id: str | None = None) -> dict[str, Any]:
        """GUILD_MEMBERS_CHUNK answering discord.py's REQUEST_GUILD_MEMBERS (op 8)."""
        return {
            "guild_id": guild_id or self.guild_id,
            "members": list(self.members.values()),
            "chunk_index": 0,
            "chunk_count": 1,
            "not_found": [],
            "nonce": nonce,
        }

    # --- messages -------------------------------------------------------------------------

    def message(
        self,
        channel_id: str,
        content: str,
        *,
        author: dict[str, Any] | None = None,
        message_id: str | None = None,
        extra: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """A message object; with `guild_id` and `member` as MESSAGE_CREATE carries them."""
        author = author or self.bot_user
        payload: dict[str, Any] = {
            "id": message_id or self.ids.next(),
            "channel_id": channel_id,
            "guild_id": self.guild_of(channel_id) or self.guild_id,
            "author": author,
            "member": {k: v for k, v in self.members[author["id"]].items() if k != "user"}
            if author["id"] in self.members
            else None,
            "content": content,
            "timestamp": now_iso(),
            "edited_timestamp": None,
            "tts": False,
            "mention_everyone": False,
            "mentions": [],
            "mention_roles": [],
            "attachments": [],
            "embeds": [],
            "components": [],
            "reactions": [],
            "pinned": False,
            "type": 0,
            "flags": 0,
        }
        if payload["member"] is None:
            del payload["member"]
        if self.channels.get(channel_id, {}).get("type") == CHANNEL_DM:
            # A DM's MESSAGE_CREATE has no guild: discord.py makes it a DMChannel message.
            payload.pop("guild_id")
            payload.pop("member", None)
        payload.update(extra or {})
        return payload

    def dm_channel(self, user_payload: dict[str, Any]) -> dict[str, Any]:
        """The DM channel between the bot and a user (made on first use, like Discord's)."""
        for channel in self.channels.values():
            if channel["type"] != CHANNEL_DM:
                continue
            if channel["recipients"][0]["id"] == user_payload["id"]:
                return channel
        channel = {
            "id": self.ids.next(),
            "type": CHANNEL_DM,
            "recipients": [user_payload],
            "last_message_id": None,
            "flags": 0,
        }
        self.channels[channel["id"]] = channel
        return channel

    def new_thread(self, parent_id: str, owner_id: str, name: str, thread_id: str) -> dict:
        guild_id = self.guild_of(parent_id) or self.guild_id
        thread = thread_channel(thread_id, guild_id, parent_id, owner_id, name)
        self.channels[thread_id] = thread
        return thread

    # --- interactions ---------------------------------------------------------------------

    def interaction(
        self,
        interaction_type: int,
        data: dict[str, Any],
        *,
        user_payload: dict[str, Any] | None = None,
        channel_id: str | None = None,
        message: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """INTERACTION_CREATE (discord/interactions.py Interaction._from_data)."""
        user_payload = user_payload or self.alice
        channel = self.channels[channel_id or self.channel_id]
        guild_id = channel.get("guild_id") or self.guild_id
        payload: dict[str, Any] = {
            "id": self.ids.next(),
            "application_id": self.application_id,
            "type": interaction_type,
            "data": data,
            "guild_id": guild_id,
            "guild": {"id": guild_id, "locale": "en-US", "features": []},
            "channel_id": channel["id"],
            "channel": channel,
            "member": {**self.members[user_payload["id"]], "permissions": ALL_PERMISSIONS},
            "token": "itoken-" + secrets.token_hex(12),
            "version": 1,
            "app_permissions": ALL_PERMISSIONS,
            "locale": "en-US",
            "guild_locale": "en-US",
            "entitlements": [],
            "authorizing_integration_owners": {"0": guild_id},
            "context": 0,
            "attachment_size_limit": 8 * 1024 * 1024,
        }
        if message is not None:
            payload["message"] = message
        return payload


def command_option(
    name: str, value: Any, *, option_type: int = 3, focused: bool = False
) -> dict[str, Any]:
    """One filled-in option of an application-command interaction (type 3 = string)."""
    option: dict[str, Any] = {"name": name, "type": option_type, "value": value}
    if focused:
        option["focused"] = True
    return option


def button_row(custom_id: str, label: str) -> dict[str, Any]:
    """An action row holding one button, as a message the bot sent would carry it."""
    return {
        "type": 1,
        "components": [
            {"type": COMPONENT_BUTTON, "style": 1, "custom_id": custom_id, "label": label}
        ],
    }


def modal_text_row(custom_id: str, value: str) -> dict[str, Any]:
    """A submitted modal's action row with one text input (modal submit `data.components`)."""
    return {"type": 1, "components": [{"type": 4, "custom_id": custom_id, "value": value}]}
