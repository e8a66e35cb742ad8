"""The one Redis lease (runtime.redis_lease) against the machine's real Redis: taken over only
after it expires, kept while renewed, and a holder past its fence refused. Each test has its own
key prefix."""

from __future__ import annotations

import asyncio
import logging

from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from rawp.clock import FakeClock
from runtime.redis_lease import EXPIRED, TAKEN, RedisLease
from runtime.tasks import TaskOwner
from tests.scale.conftest import REDIS_URL, redis_prefix  # noqa: F401 (a fixture)

log = logging.getLogger(__name__)

LEASE_MS = 400


class Holder:
    """A RedisLease with its own connection, recording what it lost."""

    def __init__(self, prefix: str, me: str, clock: FakeClock | None = None, **kwargs) -> None:
        self.redis = Redis.from_url(REDIS_URL, decode_responses=True)
        extra = {"clock": clock} if clock is not None else {}
        self.lease = RedisLease(
            self.redis,
            lambda name: f"{prefix}lease:{name}",
            me=me,
            lease_ms=LEASE_MS,
            on_lost=self._lost,
            **extra,
            **kwargs,
        )
        self.lost: list[tuple[str, str]] = []

    async def _lost(self, name: str, why: str) -> None:
        self.lost.append((name, why))

    async def close(self) -> None:
        await self.redis.aclose()


async def test_a_lease_is_taken_over_only_after_it_expires(redis_prefix):  # noqa: F811
    _, prefix = redis_prefix
    a, b = Holder(prefix, "a"), Holder(prefix, "b")
    try:
        assert await a.lease.claim("s1")
        assert not await b.lease.claim("s1") and not await b.lease.take("s1")
        await asyncio.sleep(LEASE_MS / 1000 / 2)  # half a lease: still a's
        assert not await b.lease.claim("s1")
        assert await a.lease.claim("s1")  # a claim of one's own lease keeps it
        await asyncio.sleep(LEASE_MS / 1000 + 0.2)  # a never renewed: the lease expired
        assert await b.lease.take("s1")
        assert await b.lease.holders(["s1", "s2"]) == ["b", None]
    finally:
        await a.close()
        await b.close()


async def test_a_renewed_lease_is_kept_past_its_expiry(redis_prefix):  # noqa: F811
    _, prefix = redis_prefix
    a, b = Holder(prefix, "a"), Holder(prefix, "b")
    owner = TaskOwner("test lease", log)
    await owner.start()
    try:
        assert await a.lease.claim("s1")
        owner.spawn_critical(a.lease.keep, name="renewals")
        await asyncio.sleep(LEASE_MS / 1000 * 4)  # four leases long: the loop renewed it
        assert not await b.lease.claim("s1")
        assert a.lease.valid("s1") and a.lost == []
        await a.lease.release("s1")
        assert not a.lease.holds("s1")
        assert await b.lease.claim("s1")  # released: free at once, no expiry to wait for
    finally:
        await owner.close()
        await a.close()
        await b.close()


async def test_a_stale_holders_fence_is_refused(redis_prefix):  # noqa: F811
    """A holder paused past its fence is no longer valid, by its own clock, before Redis
    expires the lease; its renewal, once another holds the lease, reports it lost and neither
    extends nor deletes the other's lease."""
    client, prefix = redis_prefix
    clock = FakeClock()
    a = Holder(prefix, "a", clock, fence_fraction=0.8)
    b = Holder(prefix, "b")
    try:
        assert await a.lease.claim("s1") and a.lease.valid("s1")
        clock.advance(LEASE_MS / 1000 * 0.8)  # the fence, short of the lease's expiry
        assert not a.lease.valid("s1") and a.lease.holds("s1")
        await client.delete(f"{prefix}lease:s1")  # as if it had expired meanwhile
        assert await b.lease.take("s1")
        await a.lease.renew()
        assert a.lost == [("s1", TAKEN)] and not a.lease.holds("s1")
        assert await b.lease.holders(["s1"]) == ["b"]
        await a.lease.release("s1")  # a late release leaves the new holder's lease alone
        assert await b.lease.holders(["s1"]) == ["b"]
    finally:
        await a.close()
        await b.close()


async def test_unreachable_redis_loses_only_what_is_past_its_fence():
    clock = FakeClock()
    # Nothing listens on port 1; no retries: each round fails at once.
    redis = Redis(host="127.0.0.1", port=1, socket_connect_timeout=1, retry=Retry(NoBackoff(), 0))
    lost: list[tuple[str, str]] = []

    async def record(name: str, why: str) -> None:
        lost.append((name, why))

    lease = RedisLease(redis, str, me="a", lease_ms=LEASE_MS, clock=clock, on_lost=record)
    try:
        lease.hold("old")
        clock.advance(LEASE_MS / 1000 / 2)
        lease.hold("new")
        await lease.renew()  # Redis away, both fences still ahead
        assert lost == [] and lease.holds("old") and lease.holds("new")
        clock.advance(LEASE_MS / 1000 / 2)  # "old" reaches its fence, "new" does not
        await lease.renew()
        assert lost == [("old", EXPIRED)] and lease.holds("new")
    finally:
        await redis.aclose()
