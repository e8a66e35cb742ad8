"""The platform budget's buckets in Redis, shared by every gateway replica (issue 19 §5).

The same buckets and answers as gateway.replicas.platform_budget.MemoryBuckets (rules 1–3 there),
kept in one Redis hash per bucket and one key per blocked route, and updated by one Lua script, so
the read-refill-check-spend step over all of a call's buckets is atomic across replicas. Time
is Redis's own `TIME` (replicas' clocks are not compared), as in
master.services.redis_rate_limit; tests inject a clock whose monotonic counter is sent instead.

Redis down: the take raises (RedisError); gateway.replicas.budget_queue waits a moment and asks
again, so a call is delayed, never dropped, and never sent unbudgeted past the shared limit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from redis.asyncio import Redis

from gateway.replicas.platform_budget import Priority, Spend, blocked_key
from rawp.clock import Clock

# KEYS: n bucket hashes, then n blocked keys (one per bucket, possibly repeated). ARGV: now
# (seconds; negative = Redis TIME), n, then per bucket: per_second, burst, need, ttl_ms.
# Returns the seconds to wait as a string (Lua numbers become integers), or false when spent.
_TAKE = """
local now = tonumber(ARGV[1])
if now < 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) + tonumber(t[2]) / 1000000
end
local n = tonumber(ARGV[2])
local wait = 0
local tokens = {}
for i = 1, n do
  local until_ = tonumber(redis.call('GET', KEYS[n + i]))
  if until_ ~= nil and until_ - now > wait then wait = until_ - now end
end
for i = 1, n do
  local base = 2 + (i - 1) * 4
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
  local base = 2 + (i - 1) * 4
  local left = tokens[i]
  if wait <= 0 then left = math.max(0, left - 1) end
  redis.call('HSET', KEYS[i], 'tokens', string.format('%.6f', left),
             'at', string.format('%.6f', now))
  redis.call('PEXPIRE', KEYS[i], ARGV[base + 4])
end
if wait > 0 then return string.format('%.6f', wait) end
return false
"""

# KEYS[1] the blocked route; ARGV: now (negative = TIME), seconds. Keeps the later end.
_BLOCK = """
local now = tonumber(ARGV[1])
if now < 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) + tonumber(t[2]) / 1000000
end
local until_ = now + tonumber(ARGV[2])
local old = tonumber(redis.call('GET', KEYS[1]))
if old == nil or old < until_ then
  redis.call('SET', KEYS[1], string.format('%.6f', until_),
             'PX', math.ceil(tonumber(ARGV[2]) * 1000) + 1000)
end
return 1
"""


class RedisBuckets:
    """`Buckets` under `prefix` + `budget:` in Redis."""

    def __init__(self, redis: Redis, prefix: str = "rawp:gw:", clock: Clock | None = None):
        self._redis = redis
        self._prefix = prefix + "budget:"
        self._clock = clock
        self._take = redis.register_script(_TAKE)
        self._block = redis.register_script(_BLOCK)

    @classmethod
    def from_url(cls, url: str, prefix: str = "rawp:gw:") -> RedisBuckets:
        return cls(Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5), prefix)

    def _now(self) -> str:
        return repr(self._clock.monotonic()) if self._clock is not None else "-1"

    async def take(self, spends: Sequence[Spend], priority: Priority) -> float:
        if not spends:
            return 0.0
        keys = [self._prefix + s.key for s in spends]
        keys += [self._prefix + "blocked:" + blocked_key(s) for s in spends]
        args: list[str | int] = [self._now(), len(spends)]
        for spend in spends:
            limit = spend.limit
            # A bucket left alone this long is full again: forgetting it changes nothing.
            ttl_ms = math.ceil(limit.burst / limit.per_second * 1000) + 1000
            args += [repr(limit.per_second), limit.burst, repr(limit.need(priority)), ttl_ms]
        wait = await self._take(keys=keys, args=args)
        return 0.0 if wait is None else float(wait)

    async def block(self, route_key: str, seconds: float) -> None:
        key = self._prefix + "blocked:" + route_key
        await self._block(keys=[key], args=[self._now(), repr(max(0.0, seconds))])

    async def aclose(self) -> None:
        await self._redis.aclose()
