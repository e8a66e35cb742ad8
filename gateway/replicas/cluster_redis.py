"""Gateway replicas through Redis: leases, the live-replica registry, requests (issue 19 §2–3).

Imported only when `RAWP_REDIS_URL` is set (gateway.replicas.cluster rule 1). Keys, under the
gateway's prefix (`RAWP_GATEWAY_REDIS_PREFIX`, default `rawp:gw:`):

- `own:{sid}` = the replica id that renders the session, held through runtime.redis_lease (the
  master's and the Discord shards' lease too): `SET NX PX lease` to claim, compare-and-extend
  every third of the lease to renew, compare-and-delete to release. A renewal that finds the
  lease gone or another's, or Redis unreachable for longer than a lease, reports the session lost
  (`on_lost`): the conversation layer stops rendering it without ending anything.
- `valid(sid)`: the fence (gateway.replicas.cluster rule 3; runtime.redis_lease rule 2). Each
  claim or renewal moves the session's local deadline to (the moment the command was sent) +
  `FENCE_FRACTION` of the lease, by this process's monotonic clock; past it, the renderer posts
  nothing, whatever Redis says.
- `replicas`: a sorted set of replica ids scored by the wall-clock millisecond until which
  each is alive; every replica refreshes its own entry every third of `HEARTBEAT_MS` and
  drops expired ones. It is the list placement hashes over (gateway.replicas.cluster rule 4).
- `bus:{replica}`: the replica's pub/sub channel. A request is `{id, from, kind, body}`; the
  reply `{re, body}` goes to the asker's channel. A publish that reaches nobody, or no reply
  within the timeout, raises `Unreachable`. Pending requests and running handlers are
  bounded (`MAX_PENDING`, `MAX_HANDLERS`): beyond them a request is refused at once.

Every loop (renewals, heartbeat, bus reader) is a critical task of the `TaskOwner` given to
`start` (runtime.tasks rule 3: restarted when it dies, a bounded number of times, then the process
ends).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import time

from redis.asyncio import Redis
from redis.exceptions import RedisError

from gateway.replicas.cluster import Handler, Lost, Unreachable
from rawp.clock import SYSTEM_CLOCK, Clock
from runtime.redis_lease import RedisLease

log = logging.getLogger(__name__)

LEASE_MS = 3000  # a dead renderer's sessions are free this long after its last renewal
FENCE_FRACTION = 0.8  # the local deadline stops short of the lease's expiry in Redis
HEARTBEAT_MS = 3000
MAX_PENDING = 1024
MAX_HANDLERS = 64
REDIS_TIMEOUT_S = 2.0


class RedisCluster:
    clustered = True

    def __init__(
        self, url: str, prefix: str, *, lease_ms: int = LEASE_MS, clock: Clock = SYSTEM_CLOCK
    ) -> None:
        self.redis = Redis.from_url(
            url,
            decode_responses=True,
            socket_timeout=REDIS_TIMEOUT_S,
            socket_connect_timeout=REDIS_TIMEOUT_S,
        )
        self.prefix = prefix
        self.me = secrets.token_hex(6)  # a new id per process: a restart is a new replica
        self.lease_ms = lease_ms
        self.lease = RedisLease(
            self.redis,
            self.own_key,
            me=self.me,
            lease_ms=lease_ms,
            fence_fraction=FENCE_FRACTION,
            clock=clock,
            on_lost=self._lost,
            renew_failed=f"replica {self.me} could not renew its leases: %s",
        )
        self._pubsub = self.redis.pubsub()
        self._pending: dict[str, asyncio.Future[dict]] = {}
        self._handlers = asyncio.Semaphore(MAX_HANDLERS)
        self._owner = None
        self._on_lost: Lost | None = None
        self._handle: Handler | None = None

    # --- keys ------------------------------------------------------------------------------

    def own_key(self, session_id: str) -> str:
        return f"{self.prefix}own:{session_id}"

    def channel(self, replica: str) -> str:
        return f"{self.prefix}bus:{replica}"

    @property
    def registry(self) -> str:
        return f"{self.prefix}replicas"

    # --- life cycle ------------------------------------------------------------------------

    async def start(self, owner, on_lost: Lost, handle: Handler) -> None:
        self._owner, self._on_lost, self._handle = owner, on_lost, handle
        await self._beat()
        await self._pubsub.subscribe(self.channel(self.me))
        # Critical (runtime.tasks rule 3): a replica without them holds leases it no longer
        # renews, or never hears a request; a death is restarted, then ends the process.
        owner.spawn_critical(self.lease.keep, name="gateway lease renewals")
        owner.spawn_critical(self._heartbeat, name="gateway replica heartbeat")
        owner.spawn_critical(self._read_bus, name="gateway replica bus")
        log.info("gateway replica %s joined the cluster (prefix %s)", self.me, self.prefix)

    async def close(self) -> None:
        """Leave: release every lease (others take the sessions at their next sweep)."""
        for session_id in list(self.lease.owned):
            await self.release(session_id)
        with contextlib.suppress(RedisError, OSError):
            await self.redis.zrem(self.registry, self.me)
        await self._pubsub.aclose()
        await self.redis.aclose()

    # --- leases (runtime.redis_lease) -------------------------------------------------------

    async def claim(self, session_id: str) -> bool:
        known = self.lease.holds(session_id)
        if not await self.lease.claim(session_id):
            return False
        if not known:
            log.info("replica %s renders session %s", self.me, session_id)
        return True

    def holds(self, session_id: str) -> bool:
        return self.lease.holds(session_id)

    def valid(self, session_id: str) -> bool:
        return self.lease.valid(session_id)

    async def holder(self, session_id: str) -> str | None:
        return await self.redis.get(self.own_key(session_id))

    async def holders(self, session_ids: list[str]) -> list[str | None]:
        return await self.lease.holders(session_ids)

    async def release(self, session_id: str) -> None:
        """Let the lease go (best effort: an unreachable Redis expires it anyway)."""
        await self.lease.release(session_id)

    async def _lost(self, session_id: str, why: str) -> None:
        log.warning("replica %s stops rendering session %s: %s", self.me, session_id, why)
        if self._on_lost is not None:  # closing waits for the pump: not in the renewal loop
            self._owner.spawn(self._on_lost(session_id), name=f"letting {session_id} go")

    # --- the live replicas -----------------------------------------------------------------

    async def _beat(self) -> None:
        now_ms = int(time.time() * 1000)
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.zadd(self.registry, {self.me: now_ms + HEARTBEAT_MS})
            pipe.zremrangebyscore(self.registry, "-inf", now_ms)
            await pipe.execute()

    async def _heartbeat(self) -> None:
        while True:
            await asyncio.sleep(HEARTBEAT_MS / 3000)
            try:
                await self._beat()
            except (RedisError, OSError) as exc:
                log.warning("replica %s: heartbeat failed: %s", self.me, exc)

    async def replicas(self) -> list[str]:
        now_ms = int(time.time() * 1000)
        return list(await self.redis.zrangebyscore(self.registry, now_ms, "+inf"))

    # --- requests --------------------------------------------------------------------------

    async def request(self, replica: str, kind: str, body: dict, timeout_s: float) -> dict:
        """Ask `replica` to run `kind`; its reply body, or `Unreachable`."""
        if len(self._pending) >= MAX_PENDING:
            raise Unreachable("too many requests in flight")
        request_id = secrets.token_hex(8)
        future: asyncio.Future[dict] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        message = {"id": request_id, "from": self.me, "kind": kind, "body": body}
        try:
            try:
                heard = await self.redis.publish(self.channel(replica), json.dumps(message))
            except (RedisError, OSError) as exc:
                raise Unreachable(f"Redis: {exc}") from None
            if not heard:
                raise Unreachable(f"replica {replica} is not listening")
            try:
                return await asyncio.wait_for(future, timeout_s)
            except TimeoutError:
                raise Unreachable(f"replica {replica} did not answer {kind}") from None
        finally:
            self._pending.pop(request_id, None)

    async def _read_bus(self) -> None:
        while True:
            try:
                message = await self._pubsub.get_message(
                    ignore_subscribe_messages=True, timeout=1.0
                )
            except (RedisError, OSError) as exc:
                log.warning("replica %s: bus read failed, retrying: %s", self.me, exc)
                await asyncio.sleep(0.5)
                continue
            if message is None or message.get("type") != "message":
                continue
            try:
                data = json.loads(message["data"])
            except ValueError:
                log.warning("replica %s: a bus message that is not JSON was ignored", self.me)
                continue
            if "re" in data:
                future = self._pending.get(str(data["re"]))
                if future is not None and not future.done():
                    future.set_result(data.get("body") or {})
            elif self._handlers.locked():
                await self._reply(data, {"error": "busy"})
            else:
                await self._handlers.acquire()
                self._owner.spawn(self._serve(data), name=f"bus request {data.get('kind')}")

    async def _serve(self, data: dict) -> None:
        try:
            try:
                body = await self._handle(str(data.get("kind")), data.get("body") or {})
            except Exception:
                log.exception("replica %s: request %s failed", self.me, data.get("kind"))
                body = {"error": "failed"}
            await self._reply(data, body)
        finally:
            self._handlers.release()

    async def _reply(self, data: dict, body: dict) -> None:
        reply = json.dumps({"re": data.get("id"), "body": body})
        try:
            await self.redis.publish(self.channel(str(data.get("from"))), reply)
        except (RedisError, OSError) as exc:
            log.warning("replica %s: a reply was lost: %s", self.me, exc)
