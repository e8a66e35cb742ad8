"""DISCORD_SHARD_IDS=auto (issue 19 §4; adapters.discord.shard_leases, auto_shards): replicas
share the shards through leases in the machine's real Redis, against the fake Discord.

- The leases alone: two replicas split four shards evenly; one that stops renewing (as a dead
  process does) loses its shards to the survivor once its leases expire.
- Two real bots: each runs its half, every guild is served by the bot holding its shard; when
  one stops, the other takes its shards over and serves those guilds too.
"""

from __future__ import annotations

import asyncio
import contextlib

from redis.asyncio import Redis

from adapters.discord import DiscordBot, DiscordSettings
from adapters.discord.shard_leases import ShardLeases
from tests.adapters.discord_support import settings_for
from tests.adapters.test_discord_shards import (
    SHARDS,
    Hooks,
    ask_nodes,
    reached,
    world_on_every_shard,
)
from tests.fakes.discord_server import FakeDiscord, discord_endpoints
from tests.scale.conftest import REDIS_URL, redis_prefix  # noqa: F401 (a fixture)

LEASE_MS = 900  # short, so a lost replica's shards move quickly in the tests


async def until(check, what: str, within: float = 30.0) -> None:
    """Wait until `check()` holds; fail naming `what` (a deadline for failing, not a
    timing assertion)."""
    async with asyncio.timeout(within):
        while not check():  # noqa: ASYNC110 (state of other objects, polled)
            await asyncio.sleep(0.05)
    assert check(), what


async def test_leases_split_evenly_and_a_silent_replica_loses_its_shards(redis_prefix):  # noqa: F811
    client, prefix = redis_prefix
    redis = Redis.from_url(REDIS_URL, decode_responses=True)
    a = ShardLeases(redis, prefix, SHARDS, me="a", lease_ms=LEASE_MS)
    b = ShardLeases(redis, prefix, SHARDS, me="b", lease_ms=LEASE_MS)
    try:
        assert await a.step() == (0, 1, 2, 3)  # alone: its fair share is everything
        await b.step()  # b registers; a sees two replicas and lets its upper half go
        assert await a.step() == (0, 1)
        assert await b.step() == (2, 3)
        assert await client.get(prefix + "shard:2") == b"b"
        # b goes silent (no renewals, no release): once its leases expire, a takes them.
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 30
        while await a.step() != (0, 1, 2, 3):
            assert loop.time() < deadline, "a never took b's expired shards"
            await asyncio.sleep(a.interval_s)
        assert await client.get(prefix + "shard:3") == b"a"
        # b comes back: its renewals find the leases taken, so it runs nothing (rule 4).
        b.held = {2, 3}
        assert 2 not in await b.step() and 3 not in b.held
    finally:
        await a.close()
        await b.close()


@contextlib.asynccontextmanager
async def auto_bot(fake: FakeDiscord, prefix: str, me: str):
    settings = settings_for(fake)
    settings = DiscordSettings(
        **{**settings.model_dump(), "shard_count": SHARDS, "shard_ids": "auto"}
    )
    leases = ShardLeases(
        Redis.from_url(REDIS_URL, decode_responses=True), prefix, SHARDS, me=me, lease_ms=LEASE_MS
    )
    hooks = Hooks()
    bot = DiscordBot(settings, hooks, shard_leases=leases, guild_ready_timeout=0.05)
    await bot.run_in_background(ready_timeout=30)
    try:
        yield bot, leases, hooks
    finally:
        await bot.close()


def settled(bot: DiscordBot, leases: ShardLeases) -> bool:
    """The bot's client runs exactly the shards it holds, all of them ready."""
    return bot.client.is_ready() and sorted(bot.client.shard_ids or []) == sorted(leases.held)


def connected(fake: FakeDiscord) -> list[int]:
    """The shards of the open gateway connections (a shard twice: two bots both run it)."""
    return sorted(s.shard[0] for s in fake.gateway.sessions if not s.ws.closed)


async def test_auto_bots_share_the_shards_and_one_takes_over_when_the_other_stops(
    redis_prefix,  # noqa: F811
):
    _, prefix = redis_prefix
    world, guilds = world_on_every_shard()
    async with FakeDiscord(world) as fake:
        with discord_endpoints(fake):
            async with auto_bot(fake, prefix, "a") as (a_bot, a, a_hooks):
                async with auto_bot(fake, prefix, "b") as (b_bot, b, b_hooks):
                    await until(
                        lambda: (
                            len(a.held) == len(b.held) == 2
                            and settled(a_bot, a)
                            and settled(b_bot, b)
                            and connected(fake) == [0, 1, 2, 3]
                        ),
                        "the two bots split the four shards and connected them",
                    )
                    for _, channel_id in guilds:
                        assert await ask_nodes(fake, channel_id) == "laptop · online"
                    channels = [channel_id for _, channel_id in guilds]
                    assert reached(a_hooks, "nodes") == {channels[i] for i in a.held}
                    assert reached(b_hooks, "nodes") == {channels[i] for i in b.held}
                    taken = set(b.held)
                # b stopped (its leases released): a takes its shards and serves their guilds.
                await until(
                    lambda: (
                        a.held == {0, 1, 2, 3}
                        and settled(a_bot, a)
                        and connected(fake) == [0, 1, 2, 3]
                    ),
                    "a took over b's shards and connected them",
                )
                for shard in sorted(taken):
                    assert await ask_nodes(fake, guilds[shard][1]) == "laptop · online"
                    assert guilds[shard][1] in reached(a_hooks, "nodes")
