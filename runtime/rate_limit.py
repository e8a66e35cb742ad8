"""Rate budgets (RAWP §7.1 `429` + `Retry-After`, §4.1.5 the client's `rate_limit`), on the
project's one token bucket (issues 18 §3, 29 §1).

Rules:

1. `TokenBuckets` is the bucket, behind one interface with two homes: `MemoryTokenBuckets` here
   (one process, the injected clock's monotonic counter) and runtime.redis_buckets (shared by
   replicas, one Lua script, Redis `TIME`). Both answer the same sequence of calls alike.
2. A `take` draws from several buckets at once, all or none: each `Draw` names its bucket's
   key, `burst` and refill rate, and how many tokens it needs there (one, or more where a caller
   keeps a reserve, gateway.replicas.platform_budget rule 2); it spends one token from each
   when every bucket has what it needs and no named block is running, else nothing. It answers
   0.0, or the seconds to wait. 1e-6 of slack: a full token must not miss by float noise.
3. `block(name, seconds)` refuses every take naming that block until the time has passed (a
   platform's 429 with Retry-After); a later end wins.
4. A bucket left alone until full again holds nothing worth keeping: the memory home forgets
   full buckets past `max_keys`, the Redis one lets them expire.

A `Budget` (`"20/s"`) is one bucket's rate; `RateLimiter` is the one-method seam the master and
the client spend through: `BucketRateLimiter` over either home, `MemoryRateLimiter` the
in-process one. The master keys it by caller (`node:<node_id>` for a node token, `addr:<ip>`
for the unauthenticated routes, pair and refresh), the client spends one key for all of its
HTTP requests.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
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


@dataclass(frozen=True)
class Draw:
    """Rule 2: what a take needs from one bucket."""

    key: str
    per_second: float
    burst: int
    need: float = 1.0


class TokenBuckets(Protocol):
    async def take(self, draws: Sequence[Draw], blocks: Sequence[str] = ()) -> float:
        """Rule 2: spend one token from every bucket of `draws`, or none: 0.0 when spent, else
        the seconds to wait before asking again."""

    async def block(self, name: str, seconds: float) -> None:
        """Rule 3: no take naming `name` among its blocks for `seconds`."""

    async def aclose(self) -> None: ...


class MemoryTokenBuckets:
    """Rules 1–4 in this process, timed by the injected clock's monotonic counter."""

    def __init__(self, clock: Clock = SYSTEM_CLOCK, max_keys: int = 100_000) -> None:
        self._clock = clock
        self._tokens: dict[str, tuple[float, float, Draw]] = {}  # key → (tokens, at, its draw)
        self._blocked: dict[str, float] = {}  # block name → until
        self._max_keys = max_keys

    async def take(self, draws: Sequence[Draw], blocks: Sequence[str] = ()) -> float:
        now = self._clock.monotonic()
        wait = max([0.0] + [self._blocked.get(name, now) - now for name in blocks])
        refilled = [self._refilled(draw, now) for draw in draws]
        for draw, tokens in zip(draws, refilled, strict=True):
            missing = draw.need - tokens
            if missing > 1e-6:
                wait = max(wait, missing / draw.per_second)
        spent = 0.0 if wait > 0 else 1.0
        if len(self._tokens) >= self._max_keys:
            self._forget_full(now)
        for draw, tokens in zip(draws, refilled, strict=True):
            self._tokens[draw.key] = (max(0.0, tokens - spent), now, draw)
        return wait

    def _refilled(self, draw: Draw, now: float) -> float:
        tokens, at, _ = self._tokens.get(draw.key, (float(draw.burst), now, draw))
        return min(float(draw.burst), tokens + max(0.0, now - at) * draw.per_second)

    def _forget_full(self, now: float) -> None:
        # Rule 4: memory stays bounded under many distinct callers.
        full = [
            key
            for key, (_, _, draw) in self._tokens.items()
            if self._refilled(draw, now) >= draw.burst
        ]
        for key in full:
            del self._tokens[key]

    async def block(self, name: str, seconds: float) -> None:
        now = self._clock.monotonic()
        until = now + max(0.0, seconds)
        if until > self._blocked.get(name, 0.0):
            self._blocked[name] = until
        if len(self._blocked) > 1_000:  # bounded: the expired blocks go
            self._blocked = {k: t for k, t in self._blocked.items() if t > now}

    async def aclose(self) -> None:
        return None


class RateLimiter(Protocol):
    async def hit(self, key: str, budget: Budget) -> None:
        """Spend one request of `key`'s budget, or raise `TooManyRequests` (429)."""


class BucketRateLimiter:
    """A `RateLimiter` spending one token of `key`'s own bucket per request."""

    def __init__(self, buckets: TokenBuckets) -> None:
        self.buckets = buckets

    async def hit(self, key: str, budget: Budget) -> None:
        wait = await self.buckets.take([Draw(key, budget.per_second, budget.burst)])
        if wait > 0:
            raise refused(wait)

    async def aclose(self) -> None:
        await self.buckets.aclose()


class MemoryRateLimiter(BucketRateLimiter):
    """Token buckets in this process, timed by the injected clock's monotonic counter."""

    def __init__(self, clock: Clock = SYSTEM_CLOCK, max_keys: int = 100_000) -> None:
        super().__init__(MemoryTokenBuckets(clock, max_keys))
