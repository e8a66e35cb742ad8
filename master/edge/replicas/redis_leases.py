"""Who holds a session's client link across master replicas: a lease in Redis (issue 9, 14 §6).

Rules:

1. `own:{sid}` = the holder's replica id, set with NX and an expiry (`claim`), extended by
   compare-and-extend every third of the lease (`run`), deleted by compare-and-delete
   (`release`). A replica that dies stops renewing; within one lease the session is free.
2. A renewal that finds the lease gone or another's, or a replica cut off from Redis for
   longer than a lease (to the others, every lease of ours has expired), reports the session
   lost (`on_lost`): the session layer lets the link go instead of contesting the socket.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from redis.asyncio import Redis
from redis.exceptions import RedisError

from master.edge.replicas.redis_scripts import RELEASE_SCRIPT, RENEW_SCRIPT, Keys

log = logging.getLogger("rawp.master.edge.redis_leases")

Lost = Callable[[str, str], Awaitable[None]]  # (session_id, why)


class Leases:
    def __init__(self, redis: Redis, keys: Keys, *, me: str, lease_ms: int, on_lost: Lost):
        self._redis = redis
        self._keys = keys
        self.me = me
        self.lease_ms = lease_ms
        self._on_lost = on_lost
        self.owned: set[str] = set()
        self._renew = redis.register_script(RENEW_SCRIPT)
        self._release = redis.register_script(RELEASE_SCRIPT)

    def key(self, session_id: str) -> str:
        return self._keys.own(session_id)

    async def claim(self, session_id: str) -> bool:
        key = self.key(session_id)
        if await self._redis.set(key, self.me, nx=True, px=self.lease_ms) or (
            await self._redis.get(key) == self.me
        ):
            self.owned.add(session_id)
            return True
        return False

    async def release(self, session_id: str) -> None:
        """Let the lease go (best effort: an unreachable Redis expires it anyway)."""
        self.owned.discard(session_id)
        try:
            await self._release(keys=[self.key(session_id)], args=[self.me])
        except RedisError as exc:
            log.info("session %s: lease not released (it expires): %s", session_id, exc)

    async def unowned(self, session_ids: list[str]) -> list[str]:
        if not session_ids:
            return []
        owners = await self._redis.mget([self.key(sid) for sid in session_ids])
        return [sid for sid, owner in zip(session_ids, owners, strict=True) if owner is None]

    async def lost(self, session_id: str, why: str = "another replica holds it now") -> None:
        if session_id not in self.owned:
            return
        self.owned.discard(session_id)
        log.warning("session %s: letting its client link go: %s", session_id, why)
        await self._on_lost(session_id, why)

    async def run(self) -> None:
        """Rule 1's renewals and rule 2's verdicts, until cancelled."""
        loop = asyncio.get_running_loop()
        renewed_at = loop.time()
        while True:
            await asyncio.sleep(self.lease_ms / 3000)
            owned = list(self.owned)
            if not owned:
                renewed_at = loop.time()
                continue
            try:
                async with self._redis.pipeline(transaction=False) as pipe:
                    for session_id in owned:
                        await self._renew(
                            keys=[self.key(session_id)], args=[self.me, self.lease_ms], client=pipe
                        )
                    results = await pipe.execute()
            except (RedisError, OSError) as exc:
                log.warning("relay: could not renew session leases: %s", exc)
                if loop.time() - renewed_at > self.lease_ms / 1000:
                    for session_id in owned:
                        await self.lost(session_id, "its lease expired while Redis was away")
                continue
            renewed_at = loop.time()
            for session_id, kept in zip(owned, results, strict=True):
                if not kept:
                    await self.lost(session_id)
