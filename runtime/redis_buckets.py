"""The token bucket's Redis home (runtime.rate_limit rules 1–4), shared by every replica: the
master's rate budgets (issue 9) and the gateway's platform budget (issue 19 §5).

One Redis hash per bucket (`tokens`, `at`) and one key per running block, under the caller's
prefix, updated by one Lua script, so the read-refill-check-spend step over all of a take's
buckets is atomic across replicas. Time is Redis's own `TIME`: replicas' monotonic counters are
not comparable, and one clock for every replica needs no clock sync. Tests inject a `Clock`
whose monotonic counter is sent instead. Only a process with Redis imports this module.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence

from redis.asyncio import Redis
from redis.exceptions import RedisError

from rawp.clock import Clock
from rawp.errors import ServiceUnavailable
from runtime.rate_limit import BucketRateLimiter, Budget, Draw

log = logging.getLogger("rawp.master.rate_limit")

# ARGV[1] now in seconds, negative = Redis's own TIME: every script's first lines.
_NOW = """
local now = tonumber(ARGV[1])
if now < 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) + tonumber(t[2]) / 1000000
end
"""

# KEYS: n bucket hashes, then m block keys. ARGV: now (seconds; negative = Redis TIME), n, m,
# then per bucket: per_second, burst, need, ttl_ms. Returns the seconds to wait as a string
# (Redis would truncate a Lua number to an integer), or false when spent.
_TAKE = (
    _NOW
    + """
local n = tonumber(ARGV[2])
local m = tonumber(ARGV[3])
local wait = 0
local tokens = {}
for i = 1, m do
  local until_ = tonumber(redis.call('GET', KEYS[n + i]))
  if until_ ~= nil and until_ - now > wait then wait = until_ - now end
end
for i = 1, n do
  local base = 3 + (i - 1) * 4
  local rate = tonumber(ARGV[base + 1])
  local burst = tonumber(ARGV[base + 2])
  local need = tonumber(ARGV[base + 3])
  local state = redis.call('HMGET', KEYS[i], 'tokens', 'at')
  local have = tonumber(state[1])
  local at = tonumber(state[2])
  if have == nil or at == nil then
    have = burst
    at = now
  end
  local elapsed = now - at
  if elapsed < 0 then elapsed = 0 end
  have = math.min(burst, have + elapsed * rate)
  tokens[i] = have
  -- 1e-6: epoch seconds as doubles carry ~0.2 us of noise; a full token must not miss by that.
  if need - have > 1e-6 and (need - have) / rate > wait then wait = (need - have) / rate end
end
for i = 1, n do
  local base = 3 + (i - 1) * 4
  local left = tokens[i]
  if wait <= 0 then left = math.max(0, left - 1) end
  redis.call('HSET', KEYS[i], 'tokens', string.format('%.6f', left),
             'at', string.format('%.6f', now))
  redis.call('PEXPIRE', KEYS[i], ARGV[base + 4])
end
if wait > 0 then return string.format('%.6f', wait) end
return false
"""
)

# KEYS[1] the block; ARGV: now (negative = TIME), seconds. Keeps the later end.
_BLOCK = (
    _NOW
    + """
local until_ = now + tonumber(ARGV[2])
local old = tonumber(redis.call('GET', KEYS[1]))
if old == nil or old < until_ then
  redis.call('SET', KEYS[1], string.format('%.6f', until_),
             'PX', math.ceil(tonumber(ARGV[2]) * 1000) + 1000)
end
return 1
"""
)


class RedisTokenBuckets:
    """`TokenBuckets` under `prefix` in Redis. A Redis that does not answer raises RedisError
    (or OSError): what that means is the caller's to decide."""

    def __init__(self, redis: Redis, prefix: str, clock: Clock | None = None) -> None:
        self._redis = redis
        self._prefix = prefix
        self._clock = clock
        self._take = redis.register_script(_TAKE)
        self._block = redis.register_script(_BLOCK)

    def _now(self) -> str:
        return repr(self._clock.monotonic()) if self._clock is not None else "-1"

    async def take(self, draws: Sequence[Draw], blocks: Sequence[str] = ()) -> float:
        if not draws and not blocks:
            return 0.0
        keys = [self._prefix + d.key for d in draws] + [self._prefix + b for b in blocks]
        args: list[str | int] = [self._now(), len(draws), len(blocks)]
        for draw in draws:
            # Rule 4: a bucket left alone this long is full again: forgetting it changes nothing.
            ttl_ms = math.ceil(draw.burst / draw.per_second * 1000) + 1000
            args += [repr(draw.per_second), draw.burst, repr(draw.need), ttl_ms]
        wait = await self._take(keys=keys, args=args)
        return 0.0 if wait is None else float(wait)

    async def block(self, name: str, seconds: float) -> None:
        await self._block(keys=[self._prefix + name], args=[self._now(), repr(max(0.0, seconds))])

    async def aclose(self) -> None:
        await self._redis.aclose()


class RedisRateLimiter(BucketRateLimiter):
    """The master's rate budgets in Redis, under `prefix` + key, shared by its replicas."""

    def __init__(self, redis: Redis, prefix: str = "rawp:rate:", clock: Clock | None = None):
        super().__init__(RedisTokenBuckets(redis, prefix, clock))

    @classmethod
    def from_url(cls, url: str, prefix: str = "rawp:rate:") -> RedisRateLimiter:
        return cls(Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5), prefix)

    async def hit(self, key: str, budget: Budget) -> None:
        try:
            await super().hit(key, budget)
        except RedisError as exc:
            # Fail closed with a clear 503: an unshared budget per replica would multiply it.
            log.warning("rate limiter: Redis did not answer (%s)", type(exc).__name__)
            raise ServiceUnavailable("the rate limiter is unavailable; retry shortly") from None
