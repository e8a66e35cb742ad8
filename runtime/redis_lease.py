"""One Redis lease for every replicated part of RAWP (issue 29 §1): the master's session leases
(master.edge.redis_leases), the gateway's renderer leases (gateway.replicas.cluster_redis) and
the Discord shard leases (adapters.discord.shard_leases). Only a process with Redis imports it.

Rules:

1. A lease is a key holding its holder's id, taken with `SET NX PX lease` (`take`; `claim` also
   accepts a lease that is already ours), extended by compare-and-extend (`RENEW`) and deleted
   by compare-and-delete (`RELEASE`): a holder never extends nor deletes a lease another has
   taken since. A holder that dies stops renewing: within one lease the name is free.
2. The fence: each successful take or renewal moves the name's local deadline to (the moment
   the command was sent) + `fence_fraction` of the lease, by the injected clock's monotonic
   counter. `valid(name)` is False past it, whatever Redis says: a holder paused or cut off
   that long acts as if it had lost the lease, because to the others it may have.
3. `renew()` is one round over every name held, in one pipeline. A name whose renewal finds the
   lease gone or another's is lost at once; when Redis does not answer, the names whose fence
   has passed are lost (the others wait for the next round). A lost name is forgotten, then
   reported to `on_lost(name, why)`.
4. `keep()` runs rule 3 every third of the lease, until cancelled: the caller spawns it as a
   critical task of its `TaskOwner` (runtime.tasks rule 3), so a dead renewal loop is restarted
   or ends the process instead of holding leases nobody renews.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable

from redis.asyncio import Redis
from redis.exceptions import RedisError

from rawp.clock import SYSTEM_CLOCK, Clock

log = logging.getLogger(__name__)

# KEYS[1] the lease, ARGV[1] me, ARGV[2] lease ms → 1 when still ours and extended, else 0.
RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""
# KEYS[1] the lease, ARGV[1] me → 1 when it was ours and is deleted, else 0.
RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""

TAKEN = "another replica holds its lease now"
EXPIRED = "its lease expired while Redis was away"

Lost = Callable[[str, str], Awaitable[None]]  # (name, why)


async def _ignore(name: str, why: str) -> None:
    return None


class RedisLease:
    """One holder's leases over a set of names, each at `key_of(name)` (rules 1–4)."""

    taken = TAKEN  # why a name is lost when another holds its lease (a caller may word it)

    def __init__(
        self,
        redis: Redis,
        key_of: Callable[[str], str],
        *,
        me: str,
        lease_ms: int,
        fence_fraction: float = 1.0,
        clock: Clock = SYSTEM_CLOCK,
        on_lost: Lost = _ignore,
        renew_failed: str = "could not renew leases: %s",
        noun: str = "session",
    ) -> None:
        self._redis = redis
        self.key = key_of
        self.me = me
        self.lease_ms = lease_ms
        self._fence_s = lease_ms / 1000 * fence_fraction
        self._clock = clock
        self.on_lost = on_lost
        self._renew_failed = renew_failed  # the caller's words for rule 3's warning
        self._noun = noun  # what a name is, in log lines
        self.owned: dict[str, float] = {}  # name → fence deadline (rule 2)
        self._renew = redis.register_script(RENEW)
        self._release = redis.register_script(RELEASE)

    @property
    def interval_s(self) -> float:
        return self.lease_ms / 3000

    # --- taking and letting go (rule 1) --------------------------------------------------------

    async def take(self, name: str) -> bool:
        """Only a free lease: `SET NX PX`."""
        sent = self._clock.monotonic()
        if await self._redis.set(self.key(name), self.me, nx=True, px=self.lease_ms):
            self.owned[name] = sent + self._fence_s
            return True
        return False

    async def claim(self, name: str) -> bool:
        """A free lease, or one that is ours already (a repeated claim keeps it)."""
        sent = self._clock.monotonic()
        key = self.key(name)
        if await self._redis.set(key, self.me, nx=True, px=self.lease_ms) or (
            await self._redis.get(key) == self.me
        ):
            self.owned[name] = sent + self._fence_s
            return True
        return False

    def hold(self, name: str) -> None:
        """Count `name` as held from now (its lease was taken by this holder elsewhere)."""
        self.owned[name] = self._clock.monotonic() + self._fence_s

    def forget(self, name: str) -> None:
        """Stop renewing `name` without deleting its lease (it expires)."""
        self.owned.pop(name, None)

    def holds(self, name: str) -> bool:
        return name in self.owned

    def valid(self, name: str) -> bool:
        """Rule 2: held, and its fence not passed."""
        deadline = self.owned.get(name)
        return deadline is not None and self._clock.monotonic() < deadline

    async def release(self, name: str, *, best_effort: bool = True) -> None:
        """Forget `name` and delete its lease if it is still ours. Best effort: an unreachable
        Redis expires it anyway (logged); else the RedisError/OSError is raised."""
        self.owned.pop(name, None)
        try:
            await self._release(keys=[self.key(name)], args=[self.me])
        except (RedisError, OSError) as exc:
            if not best_effort:
                raise
            log.info("%s %s: lease not released (it expires): %s", self._noun, name, exc)

    async def holders(self, names: list[str]) -> list[str | None]:
        if not names:
            return []
        return await self._redis.mget([self.key(name) for name in names])

    # --- keeping (rules 3–4) -------------------------------------------------------------------

    async def lose(self, name: str, why: str = TAKEN) -> None:
        if self.owned.pop(name, None) is None:
            return
        await self.on_lost(name, why)

    async def renew(self) -> None:
        """Rule 3: one round."""
        names = list(self.owned)
        if not names:
            return
        sent = self._clock.monotonic()
        try:
            async with self._redis.pipeline(transaction=False) as pipe:
                for name in names:
                    await self._renew(
                        keys=[self.key(name)], args=[self.me, self.lease_ms], client=pipe
                    )
                results = await pipe.execute()
        except (RedisError, OSError) as exc:
            log.warning(self._renew_failed, exc)
            await self._lose_expired(names)
            return
        for name, kept in zip(names, results, strict=True):
            if not kept:
                await self.lose(name, self.taken)
            elif name in self.owned:
                self.owned[name] = sent + self._fence_s

    async def _lose_expired(self, names: Iterable[str]) -> None:
        for name in names:
            if name in self.owned and not self.valid(name):
                await self.lose(name, EXPIRED)

    async def keep(self) -> None:
        """Rule 4: renew every third of the lease, until cancelled."""
        while True:
            await asyncio.sleep(self.interval_s)
            await self.renew()
