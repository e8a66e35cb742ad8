"""Which Discord shards this replica runs (issue 19 §4): DISCORD_SHARD_COUNT, DISCORD_SHARD_IDS.

Discord splits a bot's guilds over `count` gateway connections: guild g belongs to shard
`(g >> 22) % count`, and direct messages arrive on shard 0. Several `rawp gateway` replicas
share the work by each running some of the shards; every replica can still post anywhere,
because posting is REST, not gateway.

Rules:
- DISCORD_SHARD_COUNT is a number ≥ 1 (default 1), or `auto`: ask Discord (GET /gateway/bot)
  for its recommended count; then this replica runs every shard (ids cannot be checked
  against a count not yet known, so explicit ids need a number).
- DISCORD_SHARD_IDS is `all` (default), `none` (a render-only replica: it logs in for REST and
  opens no gateway connection), comma-separated ids, each below the count, or `auto`: the
  replicas share the shards through Redis leases (shard_leases.py; needs RAWP_REDIS_URL and a
  numeric count), and the set a replica runs changes as replicas come and go.
- Application commands are synced by the replica that runs shard 0 only (`syncs_commands`):
  one registration per application, not one per replica.
- One shard of one (the default) keeps a plain `discord.Client`; anything else is an
  `AutoShardedClient` (bot.py), which runs a fixed set of shards in one process.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ALL = "all"
NONE = "none"
AUTO = "auto"

ShardIds = tuple[int, ...] | Literal["all", "auto"]


def parse_shard_count(value: object) -> object:
    """`auto` → None (ask Discord); other values go to the int check."""
    if isinstance(value, str) and value.strip().lower() == "auto":
        return None
    return value.strip() if isinstance(value, str) else value


def parse_shard_ids(value: object) -> object:
    """`all`, `auto` as they are; `none` → (); `"0, 2"` → (0, 2). A bad id raises ValueError."""
    if not isinstance(value, str):
        return value
    text = value.strip().lower()
    if text in (ALL, AUTO):
        return text
    if text == NONE:
        return ()
    ids: list[int] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        if not part.isdigit():
            raise ValueError(
                f"expected all, none, auto or comma-separated shard ids, got {value!r}"
            )
        if int(part) not in ids:
            ids.append(int(part))
    return tuple(sorted(ids))


@dataclass(frozen=True)
class ShardPlan:
    """What the client runs: `count` None means "ask Discord"; `ids` None means all of them;
    `auto`: the ids come from Redis leases at run time (`ids` is then empty until some are
    held; `with_ids` gives the plan for a held set)."""

    count: int | None
    ids: tuple[int, ...] | None
    auto: bool = False

    @classmethod
    def of(cls, count: int | None, ids: ShardIds) -> ShardPlan:
        """The plan from the two settings; ValueError (one line) when they disagree."""
        if ids == ALL:
            return cls(count, None)
        if count is None:
            raise ValueError(
                f"DISCORD_SHARD_IDS={'auto' if ids == AUTO else ','.join(map(str, ids))} needs "
                "a number in DISCORD_SHARD_COUNT, not auto"
            )
        if ids == AUTO:
            return cls(count, (), auto=True)
        assert isinstance(ids, tuple)
        outside = [i for i in ids if i >= count]
        if outside:
            raise ValueError(
                f"DISCORD_SHARD_IDS: shard {outside[0]} does not exist with "
                f"DISCORD_SHARD_COUNT={count} (ids go from 0 to {count - 1})"
            )
        return cls(count, ids)

    def with_ids(self, ids: tuple[int, ...]) -> ShardPlan:
        return ShardPlan(self.count, ids, self.auto)

    @property
    def sharded(self) -> bool:
        """An AutoShardedClient is needed (anything but one shard of one)."""
        return self.auto or not (self.count == 1 and self.ids in (None, (0,)))

    @property
    def connects(self) -> bool:
        """False for a render-only replica (no shard): it logs in for REST only."""
        return self.ids != ()

    @property
    def syncs_commands(self) -> bool:
        """Only the replica running shard 0 registers the application commands."""
        return self.ids is None or 0 in self.ids

    def describe(self) -> str:
        count = "auto" if self.count is None else str(self.count)
        ids = "all" if self.ids is None else ",".join(map(str, self.ids)) or "none"
        return f"shards {ids} of {count}" + (" (auto: Redis leases)" if self.auto else "")


def shard_of(guild_id: int, count: int) -> int:
    """The shard a guild's events arrive on (Discord's formula)."""
    return (guild_id >> 22) % count
