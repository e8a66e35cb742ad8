"""The one token bucket (runtime.rate_limit rules 1–4) in its two homes: the in-process buckets
and the Redis ones (runtime.redis_buckets) refuse alike, call for call, against the machine's
real Redis. The master's rate limiters and the gateway's platform budget both stand on it."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rawp.clock import FakeClock
from rawp.errors import TooManyRequests
from runtime.rate_limit import (
    BucketRateLimiter,
    Budget,
    Draw,
    MemoryRateLimiter,
    MemoryTokenBuckets,
)
from runtime.redis_buckets import RedisRateLimiter, RedisTokenBuckets
from tests.runtime.bucket_support import in_both_homes, replay
from tests.scale.conftest import redis_prefix  # noqa: F401 (a fixture)


async def test_same_refusals_as_the_memory_limiter(redis_prefix):  # noqa: F811
    """With one fake clock, the Redis buckets allow and refuse exactly as the in-process ones."""
    client, prefix = redis_prefix
    clock = FakeClock()
    memory = MemoryRateLimiter(clock)
    replicas = [RedisRateLimiter(client, prefix, clock), RedisRateLimiter(client, prefix, clock)]
    budget = Budget(per_second=2.0, burst=3)
    steps = [0, 0, 0, 0, 0.2, 0.3, 0, 0, 1.0, 0, 0, 0, 5.0, 0, 0, 0, 0]
    outcomes: dict[str, list] = {"memory": [], "redis": []}
    for i, advance in enumerate(steps):
        clock.advance(advance)
        for name, limiter in (("memory", memory), ("redis", replicas[i % 2])):
            try:
                await limiter.hit("k", budget)
                outcomes[name].append("ok")
            except TooManyRequests as refused:
                outcomes[name].append(round(refused.retry_after, 3))
    assert outcomes["redis"] == outcomes["memory"]
    assert "ok" in outcomes["redis"] and any(o != "ok" for o in outcomes["redis"])


# Three buckets of different rates and bursts; a take draws from one or two of them at once.
_DRAWS = [
    (Draw("a", 2.0, 3),),
    (Draw("a", 2.0, 3, need=2.0), Draw("shared", 5.0, 5)),
    (Draw("b", 0.5, 1), Draw("shared", 5.0, 5)),
]
_BLOCKS = [("route-a",), (), ("route-a", "route-b")]
_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("take"), st.integers(0, 2)),
        st.tuples(st.just("advance"), st.sampled_from([0.0, 0.1, 0.25, 0.7, 1.5])),
        st.tuples(st.just("block"), st.sampled_from(["route-a", "route-b"]), st.just(0.6)),
    ),
    max_size=30,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=_OPS)
def test_memory_and_redis_buckets_answer_alike(ops):
    """Several draws at once, a need above one token, blocks: the same waits, call for call."""

    answers = replay(
        ops,
        lambda buckets, op: buckets.take(_DRAWS[op[1]], _BLOCKS[op[1]]),
        lambda buckets, op: buckets.block(op[1], op[2]),
    )
    memory, redis = in_both_homes(MemoryTokenBuckets, RedisTokenBuckets, answers)
    assert memory == redis


async def test_a_take_spends_from_all_its_buckets_or_none():
    clock = FakeClock()
    buckets = MemoryTokenBuckets(clock)
    assert await buckets.take([Draw("b", 0.5, 1)]) == 0.0  # b is empty now
    both = [Draw("a", 1.0, 2), Draw("b", 0.5, 1)]
    assert await buckets.take(both) == 2.0  # b refuses: a keeps its two tokens
    assert await buckets.take([Draw("a", 1.0, 2)]) == 0.0
    assert await buckets.take([Draw("a", 1.0, 2)]) == 0.0
    assert await buckets.take([Draw("a", 1.0, 2)]) == 1.0


async def test_a_block_holds_every_take_naming_it_until_it_ends():
    clock = FakeClock()
    buckets = MemoryTokenBuckets(clock)
    await buckets.block("route", 2.0)
    await buckets.block("route", 1.0)  # a shorter block does not shorten the running one
    assert await buckets.take([Draw("a", 1.0, 5)], ["route"]) == 2.0
    assert await buckets.take([Draw("a", 1.0, 5)]) == 0.0  # not naming it: free
    clock.advance(2.0)
    assert await buckets.take([Draw("a", 1.0, 5)], ["route"]) == 0.0


async def test_full_buckets_are_forgotten_past_max_keys_and_the_others_kept():
    clock = FakeClock()
    buckets = MemoryTokenBuckets(clock, max_keys=2)
    slow = Budget.parse("1/h")
    limiter = BucketRateLimiter(buckets)
    await limiter.hit("spent", slow)
    await buckets.take([Draw("refills", 100.0, 1)])
    clock.advance(1.0)  # "refills" is full again, "spent" is not
    await limiter.hit("third", slow)
    assert set(buckets._tokens) == {"spent", "third"}
    try:
        await limiter.hit("spent", slow)
        raise AssertionError("a spent bucket was forgotten")
    except TooManyRequests:
        pass
