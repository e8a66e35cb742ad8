"""Running one sequence of bucket calls in both homes of the token bucket (runtime.rate_limit
rule 1), for tests that check they answer alike: the runtime's own and the gateway's budget."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

from rawp.clock import FakeClock
from tests.scale.conftest import REDIS_URL

Answers = Callable[[Any, FakeClock], Awaitable[list]]


def in_both_homes(
    make_memory: Callable[[FakeClock], Any],
    make_redis: Callable[[Any, str, FakeClock], Any],
    answers: Answers,
) -> tuple[list, list]:
    """`answers(buckets, clock)` on memory buckets, then on Redis buckets under a prefix of
    their own (deleted after), each with its own fake clock: (memory's, Redis's)."""

    async def both() -> tuple[list, list]:
        from redis.asyncio import Redis

        memory_clock, redis_clock = FakeClock(), FakeClock()
        memory = await answers(make_memory(memory_clock), memory_clock)
        client = Redis.from_url(REDIS_URL, socket_timeout=5)
        prefix = f"rawp-test:{secrets.token_hex(6)}:"
        try:
            redis = await answers(make_redis(client, prefix, redis_clock), redis_clock)
        finally:
            keys = [k async for k in client.scan_iter(match=prefix + "*")]
            if keys:
                await client.delete(*keys)
            await client.aclose()
        return memory, redis

    return asyncio.run(both())


def replay(ops: list[tuple], take, block) -> Answers:
    """The answers of `ops`, tuples ("take", …), ("advance", seconds) or ("block", …): each
    take's wait (rounded), with `take(buckets, op)` and `block(buckets, op)` saying how."""

    async def answers(buckets: Any, clock: FakeClock) -> list:
        seen = []
        for op in ops:
            if op[0] == "take":
                seen.append(round(await take(buckets, op), 4))
            elif op[0] == "advance":
                clock.advance(op[1])
            else:
                await block(buckets, op)
        return seen

    return answers
