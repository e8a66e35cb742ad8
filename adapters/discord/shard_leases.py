"""Automatic shard assignment through Redis leases (DISCORD_SHARD_IDS=auto, issue 19 §4).

Rules:

1. Every replica in auto mode heartbeats into one registry, the sorted set
   `{prefix}shard-replicas` (member: its replica id; score: when its heartbeat expires, in
   Redis's own clock, so replicas need no clock sync). Expired members are swept by whoever
   counts next. (This tiny registry is the shard assigner's own: the gateway has no cluster
   registry of its own to reuse.)
2. Shard i is held through the lease `{prefix}shard:{i}` = the holder's replica id
   (runtime.redis_lease), taken with SET NX PX, renewed by compare-and-extend every third of
   the lease, let go by compare-and-delete. A replica that dies stops renewing: within one
   lease its shards are free.
3. A replica holds at most its fair share, ceil(count / live replicas): above it, it lets its
   highest shards go (a replica that joins gets work); below it, it claims free shards, lowest
   first. Each `step()` is one round of that, and returns the shards held now.
4. A renewal that finds the lease gone or someone else's drops the shard at once: two replicas
   never both run a shard for longer than one round.
"""

from __future__ import annotations

import logging
import math
import secrets

from redis.asyncio import Redis
from redis.exceptions import RedisError

from rawp.clock import SYSTEM_CLOCK, Clock
from runtime.redis_lease import RedisLease

log = logging.getLogger(__name__)

DEFAULT_LEASE_MS = 6000


class ShardLeases:
    """One replica's side of rules 1–4; `step()` is called every `lease_ms / 3`."""

    def __init__(
        self,
        redis: Redis,
        prefix: str,
        count: int,
        *,
        me: str | None = None,
        lease_ms: int = DEFAULT_LEASE_MS,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._redis = redis
        self.prefix = prefix
        self.count = count
        self.me = me or secrets.token_hex(8)
        self.lease_ms = lease_ms
        self.lease = RedisLease(
            redis,
            lambda shard: f"{prefix}shard:{shard}",
            me=self.me,
            lease_ms=lease_ms,
            clock=clock,
            on_lost=self._dropped,
            renew_failed="discord: shard leases not renewed this round: %s",
            noun="shard",
        )

    @property
    def interval_s(self) -> float:
        return self.lease.interval_s

    @property
    def held(self) -> set[int]:
        return {int(shard) for shard in self.lease.owned}

    @held.setter
    def held(self, shards: set[int]) -> None:
        """What this replica believes it holds (a test sets a belief Redis contradicts)."""
        self.lease.owned.clear()
        for shard in shards:
            self.lease.hold(str(shard))

    def key(self, shard: int) -> str:
        return self.lease.key(str(shard))

    @property
    def registry(self) -> str:
        return f"{self.prefix}shard-replicas"

    async def live_replicas(self) -> int:
        """Rule 1: heartbeat, sweep the expired, count the rest (this replica included)."""
        seconds, micros = await self._redis.time()
        now_ms = seconds * 1000 + micros // 1000
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.zadd(self.registry, {self.me: now_ms + self.lease_ms})
            pipe.zremrangebyscore(self.registry, "-inf", now_ms)
            pipe.pexpire(self.registry, self.lease_ms * 10)
            pipe.zcard(self.registry)
            *_, live = await pipe.execute()
        return max(1, int(live))

    async def step(self) -> tuple[int, ...]:
        """One round of rules 1–4; the shards held after it, sorted. A Redis error keeps
        the current set (its leases outlive a short outage; a long one frees them for others,
        and this replica drops each once its lease has passed by its own clock, rule 4)."""
        try:
            share = math.ceil(self.count / await self.live_replicas())
            await self.lease.renew()  # rule 2/4: keep what is still ours
            held = self.held
            for shard in sorted(held, reverse=True)[: max(0, len(held) - share)]:
                await self.release(shard)  # rule 3: above the fair share
            for shard in range(self.count):  # rule 3: up to the fair share, lowest first
                if len(self.lease.owned) >= share:
                    break
                if str(shard) not in self.lease.owned:
                    await self.lease.take(str(shard))
        except (RedisError, OSError) as exc:
            log.warning("discord: shard leases not renewed this round: %s", exc)
        return tuple(sorted(self.held))

    async def release(self, shard: int) -> None:
        await self.lease.release(str(shard), best_effort=False)

    async def _dropped(self, shard: str, why: str) -> None:
        log.warning("discord: shard %s's lease was lost; dropping it", shard)

    @classmethod
    def for_plan(cls, count: int | None, redis_url: str | None, prefix: str) -> ShardLeases:
        """The leases of DISCORD_SHARD_IDS=auto; ValueError (one line) without Redis."""
        if not redis_url:
            raise ValueError("DISCORD_SHARD_IDS=auto needs RAWP_REDIS_URL (the shard leases)")
        assert count is not None  # settings: auto ids need a numeric count
        return cls(Redis.from_url(redis_url, decode_responses=True), prefix, count)

    async def close(self) -> None:
        """Release everything (rule 2) and close the Redis connection."""
        await self.release_all()
        await self._redis.aclose()

    async def release_all(self) -> None:
        """Let every shard and the registry entry go (a clean stop: others take over at once)."""
        try:
            for shard in sorted(self.held):
                await self.release(shard)
            await self._redis.zrem(self.registry, self.me)
        except (RedisError, OSError) as exc:
            log.info("discord: shard leases not released (they expire): %s", exc)
