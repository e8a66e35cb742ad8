"""Who holds a session's client link across master replicas: a lease in Redis (issue 9, 14 §6).

Rules:

1. `own:{sid}` = the holder's replica id, set with NX and an expiry (`claim`), extended by
   compare-and-extend every third of the lease (`run`), deleted by compare-and-delete
   (`release`): runtime.redis_lease, the one lease of every replicated part. A replica that
   dies stops renewing; within one lease the session is free.
2. A renewal that finds the lease gone or another's, or a replica cut off from Redis for
   longer than a lease (to the others, every lease of ours has expired), reports the session
   lost (`on_lost`): the session layer lets the link go instead of contesting the socket.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from redis.asyncio import Redis

from master.edge.replicas.redis_scripts import Keys
from rawp.clock import SYSTEM_CLOCK, Clock
from runtime.redis_lease import RedisLease

log = logging.getLogger("rawp.master.edge.redis_leases")

Lost = Callable[[str, str], Awaitable[None]]  # (session_id, why)


class Leases(RedisLease):
    """runtime.redis_lease over `own:{sid}`, with the relay's words and verdicts (rule 2)."""

    taken = "another replica holds it now"

    def __init__(
        self,
        redis: Redis,
        keys: Keys,
        *,
        me: str,
        lease_ms: int,
        on_lost: Lost,
        clock: Clock = SYSTEM_CLOCK,
    ):
        super().__init__(
            redis,
            keys.own,
            me=me,
            lease_ms=lease_ms,
            clock=clock,
            on_lost=self._let_go,
            renew_failed="relay: could not renew session leases: %s",
        )
        self._on_lost = on_lost

    async def unowned(self, session_ids: list[str]) -> list[str]:
        owners = await self.holders(session_ids)
        return [sid for sid, owner in zip(session_ids, owners, strict=True) if owner is None]

    async def lost(self, session_id: str, why: str = taken) -> None:
        await self.lose(session_id, why)

    async def _let_go(self, session_id: str, why: str) -> None:
        log.warning("session %s: letting its client link go: %s", session_id, why)
        await self._on_lost(session_id, why)

    async def run(self) -> None:
        """Rule 1's renewals and rule 2's verdicts, until cancelled."""
        await self.keep()
