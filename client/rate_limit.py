"""The client's own `rate_limit` (RAWP §4.1.5): HTTP requests per second it accepts.

A token bucket refilled at `rate` per second, holding at most `rate` tokens (one second of
burst). A request that finds it empty is refused with 429 and a whole-second `Retry-After`.
"""

from __future__ import annotations

from rawp.clock import Clock
from rawp.errors import TooManyRequests


class RequestBucket:
    """One token bucket for all of the client's HTTP requests; `take()` spends a token or
    raises 429. Not the master's per-key `RateLimiter` (master.services.rate_limit)."""

    def __init__(self, rate: int, clock: Clock) -> None:
        self.rate = float(rate)
        self.clock = clock
        self.tokens = self.rate
        self.stamp = clock.monotonic()

    def take(self) -> None:
        now = self.clock.monotonic()
        self.tokens = min(self.rate, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens < 1:
            wait = (1 - self.tokens) / self.rate
            raise TooManyRequests(f"more than {int(self.rate)} requests per second", wait)
        self.tokens -= 1
