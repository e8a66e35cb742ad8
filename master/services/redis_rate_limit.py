"""Rate budgets shared by several master replicas through Redis (RAWP §7.1, issue 9).

The same token bucket as runtime.rate_limit.MemoryRateLimiter (burst `budget.burst`, refilled at
`budget.per_second`; past it `TooManyRequests` with the wait as `retry_after`), kept in one Redis
hash per key and updated by one Lua script, so the read-refill-spend step is atomic across
replicas. Time is Redis's own `TIME` by default: replicas' monotonic counters are not
comparable, and one clock for every replica needs no clock sync. Tests inject a `Clock` whose
wall time is sent instead.

Only `master.wiring` imports this module, and only when `RAWP_REDIS_URL` is set: the
single-process master never imports `redis`.
"""

from __future__ import annotations

import logging
import math

from redis.asyncio import Redis
from redis.exceptions import RedisError

from rawp.clock import Clock
from rawp.errors import ServiceUnavailable
from runtime.rate_limit import Budget, refused

log = logging.getLogger("rawp.master.rate_limit")

# KEYS[1] the bucket; ARGV: per_second, burst, now (seconds; negative = use Redis TIME),
# ttl_ms. Returns nil when the request is allowed, else the seconds to wait, as a string
# (Redis would truncate a Lua number to an integer).
_TOKEN_BUCKET = """
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
if now < 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) + tonumber(t[2]) / 1000000
end
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1])
local at = tonumber(state[2])
if tokens == nil or at == nil then
  tokens = burst
  at = now
end
if now < at then now = at end
tokens = math.min(burst, tokens + (now - at) * rate)
local wait = false
-- 1e-6: epoch seconds as doubles carry ~0.2 µs of noise; a full token must not miss by that.
if tokens < 1 - 1e-6 then
  wait = string.format('%.6f', (1 - tokens) / rate)
else
  tokens = math.max(0, tokens - 1)
end
redis.call('HSET', KEYS[1], 'tokens', string.format('%.6f', tokens),
           'at', string.format('%.6f', now))
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return wait
"""


class RedisRateLimiter:
    """A `RateLimiter` whose buckets live in Redis under `prefix` + key."""

    def __init__(self, redis: Redis, prefix: str = "rawp:rate:", clock: Clock | None = None):
        self._redis = redis
        self._prefix = prefix
        self._clock = clock
        self._script = redis.register_script(_TOKEN_BUCKET)

    @classmethod
    def from_url(cls, url: str, prefix: str = "rawp:rate:") -> RedisRateLimiter:
        return cls(Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5), prefix)

    async def hit(self, key: str, budget: Budget) -> None:
        now = self._clock.now().timestamp() if self._clock is not None else -1.0
        # A bucket left alone this long is full again: forgetting it changes nothing.
        ttl_ms = math.ceil(budget.burst / budget.per_second * 1000) + 1000
        try:
            wait = await self._script(
                keys=[self._prefix + key],
                args=[repr(budget.per_second), budget.burst, repr(now), ttl_ms],
            )
        except RedisError as exc:
            # Fail closed with a clear 503: an unshared budget per replica would multiply it.
            log.warning("rate limiter: Redis did not answer (%s)", type(exc).__name__)
            raise ServiceUnavailable("the rate limiter is unavailable; retry shortly") from None
        if wait is not None:
            raise refused(float(wait))

    async def aclose(self) -> None:
        await self._redis.aclose()
