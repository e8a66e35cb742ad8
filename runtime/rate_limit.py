"""Rate budgets (RAWP §7.1 `429` + `Retry-After`, §4.1.5 the client's `rate_limit`).

One token bucket for the whole project (issue 18 §3): a `Budget` (`"20/s"`) says how many
requests at once and how fast they refill; `RateLimiter` is the seam. The in-process
`MemoryRateLimiter` here counts per key; the master keys it by caller (`node:<node_id>` for a
node token, `addr:<ip>` for the unauthenticated routes, pair and refresh), the client spends one
key for all of its HTTP requests. master.services.redis_rate_limit keeps the same bucket in
Redis, shared by several master replicas (issue 9), behind the same one method.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

from rawp.clock import SYSTEM_CLOCK, Clock
from rawp.errors import TooManyRequests


@dataclass(frozen=True)
class Budget:
    """`burst` requests at once, refilled at `per_second` (a token bucket)."""

    per_second: float
    burst: int

    @classmethod
    def parse(cls, text: str) -> Budget:
        """`"20/s"`, `"10/min"` or `"600/h"`; the burst is the count itself (at least 1)."""
        count, sep, unit = text.strip().partition("/")
        seconds = {"s": 1, "sec": 1, "min": 60, "m": 60, "h": 3600}.get(unit.strip().lower())
        try:
            number = float(count)
        except ValueError:
            number = -1
        if not sep or seconds is None or number <= 0:
            raise ValueError(f"a rate looks like '20/s', '10/min' or '600/h', not {text!r}")
        return cls(per_second=number / seconds, burst=max(1, int(number)))


def refused(wait: float) -> TooManyRequests:
    """The 429 for a request `wait` seconds early; the text never says "retry in 0.0 seconds"
    (every limiter, memory or Redis, words it alike)."""
    shown = max(0.1, math.ceil(wait * 10) / 10)
    return TooManyRequests(f"rate limit exceeded; retry in {shown:.1f} seconds", retry_after=wait)


class RateLimiter(Protocol):
    async def hit(self, key: str, budget: Budget) -> None:
        """Spend one request of `key`'s budget, or raise `TooManyRequests` (429)."""


class MemoryRateLimiter:
    """Token buckets in this process, timed by the injected clock's monotonic counter."""

    def __init__(self, clock: Clock = SYSTEM_CLOCK, max_keys: int = 100_000) -> None:
        self._clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}  # key → (tokens, at)
        self._max_keys = max_keys

    async def hit(self, key: str, budget: Budget) -> None:
        now = self._clock.monotonic()
        tokens, at = self._buckets.get(key, (float(budget.burst), now))
        tokens = min(float(budget.burst), tokens + (now - at) * budget.per_second)
        if tokens < 1.0:
            self._buckets[key] = (tokens, now)
            wait = (1.0 - tokens) / budget.per_second
            raise refused(wait)
        if len(self._buckets) >= self._max_keys and key not in self._buckets:
            self._forget_full_buckets(now, budget)
        self._buckets[key] = (tokens - 1.0, now)

    def _forget_full_buckets(self, now: float, budget: Budget) -> None:
        # Keep memory bounded under many distinct callers: a bucket that has refilled holds
        # nothing worth remembering.
        full = [
            k
            for k, (t, at) in self._buckets.items()
            if t + (now - at) * budget.per_second >= budget.burst
        ]
        for k in full:
            del self._buckets[k]
