"""The in-process token bucket's refusal text (runtime.rate_limit): what a person reads."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rawp.clock import FakeClock
from rawp.errors import TooManyRequests
from runtime.rate_limit import Budget, MemoryRateLimiter, refused


@given(st.floats(min_value=0.0, max_value=10_000.0, allow_nan=False))
def test_the_wait_named_is_never_zero_nor_shorter_than_the_real_one(wait):
    text = refused(wait).message
    shown = float(text.removeprefix("rate limit exceeded; retry in ").removesuffix(" seconds"))
    assert shown >= 0.1 and shown >= wait - 1e-9, text


async def test_a_refusal_a_few_milliseconds_early_does_not_say_zero():
    clock = FakeClock()
    limiter, budget = MemoryRateLimiter(clock), Budget.parse("30/s")
    for _ in range(30):
        await limiter.hit("user", budget)
    clock.advance(1 / 30 - 0.01)  # the next token is 10 ms away
    with pytest.raises(TooManyRequests) as early:
        await limiter.hit("user", budget)
    assert "retry in 0.1 seconds" in early.value.message
    assert early.value.retry_after == pytest.approx(0.01)
