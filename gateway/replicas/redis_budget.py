"""The platform budget's buckets in Redis, shared by every gateway replica (issue 19 §5).

The same buckets and answers as gateway.replicas.platform_budget.MemoryBuckets (rules 1–3 there):
the project's one token bucket in Redis (runtime.redis_buckets, as the master's rate budgets),
one Redis hash per bucket and one key per blocked route under `prefix` + `budget:`. Time is
Redis's own `TIME`; tests inject a clock whose monotonic counter is sent instead.

Redis down: the take raises (RedisError); gateway.replicas.budget_queue waits a moment and asks
again, so a call is delayed, never dropped, and never sent unbudgeted past the shared limit.
"""

from __future__ import annotations

from redis.asyncio import Redis

from gateway.replicas.platform_budget import PlatformBuckets
from rawp.clock import Clock
from runtime.redis_buckets import RedisTokenBuckets


class RedisBuckets(PlatformBuckets):
    """`Buckets` under `prefix` + `budget:` in Redis."""

    def __init__(self, redis: Redis, prefix: str = "rawp:gw:", clock: Clock | None = None):
        super().__init__(RedisTokenBuckets(redis, prefix + "budget:", clock))

    @classmethod
    def from_url(cls, url: str, prefix: str = "rawp:gw:") -> RedisBuckets:
        return cls(Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5), prefix)
