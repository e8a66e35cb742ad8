"""The relay across several master replicas, through Redis (issue 9, docs/scale-out.md).

A session's client link is held by exactly one replica, its *owner*; its edge sockets may be
on any replica. The relay is composed of parts with one job each (issue 14 §6): `Leases`
(who holds a session, redis_leases), `OrderedWriter` (frames, greetings and notices written
in order, bounded and idempotent, redis_writer), `Subscriptions` (the one pub/sub connection
and its reader, redis_subscriptions), `Attachments` (sockets attaching and their replays,
redis_attachments), `HandOffs` (edge frames to the holder, redis_handoffs) and the `Inbox`
(what the reader hands to each, redis_inbox), with every task owned by one `TaskOwner`.
Local sockets are kept as in one process (the inherited hubs). Rules:

1. Ownership is a lease (redis_leases); losing it (`ownership_lost`) closes this replica's
   link, and a dead replica's sessions are taken over by another's sweep.
2. A client frame is written by the owner with one script call that checks the lease
   (fencing), drops a `message_id` already written, appends the frame to the session's
   stream (bounded like the in-process ring), moves the takeover cursor and publishes it on
   the session's channel (redis_writer). `publish` never waits; the pump waits for room.
3. Every replica, the owner included, delivers a session's frames to its own edge sockets from
   the session's channel, which it listens to while it holds edge sockets of the session.
   A socket attaching is replayed *after* the subscription is confirmed, with live frames
   held back meanwhile and deduplicated against the replay: no gap, no repeat. With a cursor
   the stream holds, the replay is the frames after it plus the node frames published since
   (both streams' ids are Redis times, so they merge in order), and no greeting; with a
   cursor it does not hold, the client is asked (relay rule 4), and live frames the client's
   replay already had are dropped by `message_id` until the first newer one.
4. An edge frame on a replica that does not own the session is published on the session's
   client channel with a reply channel and a deadline; the owner hands it to its client
   link and answers (issue 14 §2): delivered only when the owner says it wrote the frame to
   the client's socket. No answer within the deadline (a frozen or dying owner) → False, so
   the edge gets `CLIENT_UNAVAILABLE` and may resend the same `message_id`; the owner drops a
   hand-off whose deadline has passed, and the client acts on a control id once. When nobody
   listens, this replica tries to take the session over and sends it itself.
5. Node pushes, node unregistrations (§3.5) and session ends go on one bus channel every
   replica listens to; node pushes are also kept in a short per-node stream for replays.
   Control-frame claims (E-WS-11) are `SET NX` keys with an expiry.
6. The reader, the writer and the lease loop are critical tasks (issue 29 §4): one that dies
   is started again, a bounded number of times, and then the replica ends itself (exit status
   `EXIT_FATAL`): its leases are released or expire and other replicas take its sessions over,
   the client replaying from the takeover cursor what this replica never wrote.
"""

from __future__ import annotations

import asyncio
import logging
import secrets

import orjson
from redis.asyncio import Redis
from redis.exceptions import RedisError

from master.edge.relay.edge_socket import EdgeSocket
from master.edge.relay.relay import GREETING_TYPES, NOT_A_CURSOR, InProcessRelay, OwnerHooks
from master.edge.replicas.redis_attachments import Attachments
from master.edge.replicas.redis_handoffs import HandOffs
from master.edge.replicas.redis_inbox import Inbox
from master.edge.replicas.redis_leases import Leases
from master.edge.replicas.redis_scripts import NODE_FRAMES_KEPT, SESSION_TTL_MS, Keys
from master.edge.replicas.redis_subscriptions import Subscriptions
from master.edge.replicas.redis_writer import OrderedWriter
from runtime.tasks import TaskOwner

log = logging.getLogger("rawp.master.edge.redis_relay")

CONTROL_TTL_MS = 3600 * 1000


class RedisRelay(InProcessRelay):
    """Local sockets as in one process (the inherited hubs); everything shared through Redis."""

    shared = True

    def __init__(
        self,
        url: str,
        *,
        prefix: str = "rawp:",
        replay_frames: int = 2048,
        dedupe_window: int = 4096,
        lease_seconds: float = 5.0,
        handoff_seconds: float = 3.0,
        deliver_seconds: float = 6.0,
    ) -> None:
        super().__init__(replay_frames, dedupe_window)
        self.me = secrets.token_hex(8)
        self._url = url
        self.keys = Keys(prefix)
        self._lease_ms = int(lease_seconds * 1000)
        self._handoff = handoff_seconds
        self._redis: Redis | None = None
        self._tasks = TaskOwner("redis relay", log)
        self.attachments = Attachments(self)  # rule 3
        self.handoffs = HandOffs(self, deliver_seconds)  # rule 4
        self.inbox = Inbox(self, self._tasks)  # what the reader hands on (rules 3, 4, 5)

    @property
    def redis(self) -> Redis:
        assert self._redis is not None, "the relay has not started"
        return self._redis

    # --- lifecycle -----------------------------------------------------------------------------

    async def start(self, hooks: OwnerHooks) -> None:
        await super().start(hooks)
        # A timeout on every command: a Redis that stops answering must fail calls (and so
        # expire this replica's leases), not hang them.
        self._redis = Redis.from_url(
            self._url, decode_responses=True, socket_connect_timeout=5, socket_timeout=5
        )
        self.leases = Leases(
            self._redis, self.keys, me=self.me, lease_ms=self._lease_ms, on_lost=self._lost
        )
        self.writer = OrderedWriter(
            self._redis,
            self.keys,
            me=self.me,
            replay_frames=self._replay_frames,
            lease_ms=self._lease_ms,
            on_fenced=self.leases.lost,
        )
        self.has_room = self.writer.has_room  # Relay.has_room: room in the writer's queue
        self.subscriptions = Subscriptions(self._redis, self.inbox.handle)
        await self.subscriptions.open(self.keys.bus, self.keys.replies(self.me))
        await self._tasks.start()
        # Critical (runtime.tasks rule 3): a replica without its reader, writer or lease loop
        # would serve on without relaying (rule 6). Restarting keeps the writer's queue.
        self._tasks.spawn_critical(self.subscriptions.run, name="reader")
        self._tasks.spawn_critical(self.writer.run, name="writer")
        self._tasks.spawn_critical(self.leases.run, name="leases")
        log.info("relay: shared through Redis as replica %s", self.me)

    async def close(self) -> None:
        if self._redis is None:
            return  # never started: a one-shot command (pairing-url) builds it, never starts it
        if not await self.writer.flush(2.0):
            log.warning("relay: writes still queued at shutdown were not sent")
        for session_id in list(self.leases.owned):
            await self.leases.release(session_id)
        await self._tasks.close()
        await self.subscriptions.close()
        await self.redis.aclose()

    async def _lost(self, session_id: str, why: str) -> None:
        assert self.hooks is not None
        await self.hooks.ownership_lost(session_id)

    # --- client → edges (rules 2, 3) -----------------------------------------------------------

    def publish(self, session_id: str, message_id: str, text: str, kind: str = "") -> None:
        self.writer.put("frame", session_id, message_id, text, kind not in NOT_A_CURSOR)

    async def room(self) -> None:
        await self.writer.room()

    def remember_greeting(self, session_id: str, type: str, text: str) -> None:
        self.writer.put("greeting", session_id, type, text)

    async def greeting_texts(self, session_id: str) -> list[str]:
        key = self.keys.session(session_id, "greeting")
        texts = await self.redis.hmget(key, list(GREETING_TYPES))
        return [text for text in texts if text]

    async def attach(self, edge: EdgeSocket, last_message_id: str | None = None) -> None:
        await self.attachments.attach(edge, last_message_id, self.go_live)

    def detach(self, edge: EdgeSocket) -> None:
        super().detach(edge)
        self.attachments.forget(edge)
        self._tidy(edge.session_id)

    def _tidy(self, session_id: str) -> None:
        """Stop listening for a session this replica no longer serves any socket of."""

        def serves() -> bool:
            hub = self._hubs.get(session_id)
            return self.attachments.attaching(session_id) or (hub is not None and bool(hub.edges))

        if serves():
            return
        hub = self._hubs.get(session_id)
        if hub is not None and hub.client is None:
            del self._hubs[session_id]
        channel = self.keys.to_edges(session_id)
        if self._tasks.running:
            self._tasks.spawn(
                self.subscriptions.unsubscribe(channel, serves), name=f"unsubscribe {channel}"
            )

    # --- edge → client (rule 4) ----------------------------------------------------------------

    def bind_client(self, session_id, link) -> None:
        super().bind_client(session_id, link)
        self.leases.hold(session_id)
        self._tasks.spawn(
            self.subscriptions.subscribe(self.keys.to_client(session_id)),
            name=f"subscribe client channel {session_id}",
        )

    def unbind_client(self, session_id: str) -> None:
        super().unbind_client(session_id)
        channel = self.keys.to_client(session_id)
        if self._tasks.running:
            self._tasks.spawn(
                self.subscriptions.unsubscribe(
                    channel, lambda: self.client_of(session_id) is not None
                ),
                name=f"unsubscribe {channel}",
            )

    async def to_client(self, session_id: str, text: str) -> bool:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._handoff
        while True:
            client = self.client_of(session_id)
            if client is not None:
                return await client.send(text)
            try:
                answered = await self.handoffs.ask(session_id, text)
                if answered is not None:
                    return answered  # the owner listened: its answer stands
                assert self.hooks is not None
                if await self.hooks.take_over(session_id):  # held here now: our link sends it
                    client = self.client_of(session_id)
                    return client is not None and await client.send(text)
            except RedisError as exc:
                log.warning("session %s: Redis refused an edge frame: %s", session_id, exc)
            if loop.time() >= deadline:
                return False
            await asyncio.sleep(0.1)

    # --- control claims, node pushes, ends (rule 5) --------------------------------------------

    async def claim_control(self, session_id: str, message_id: str) -> bool:
        key = self.keys.session(session_id, f"control:{message_id}")
        return bool(await self.redis.set(key, "1", nx=True, px=CONTROL_TTL_MS))

    async def release_control(self, session_id: str, message_id: str) -> None:
        await self.redis.delete(self.keys.session(session_id, f"control:{message_id}"))

    async def publish_node(self, node_id: str, text: str) -> int:
        message = orjson.dumps({"node": node_id, "text": text}).decode()
        key = self.keys.node_frames(node_id)
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.xadd(key, {"t": text}, maxlen=NODE_FRAMES_KEPT, approximate=True)
            pipe.pexpire(key, SESSION_TTL_MS)
            pipe.publish(self.keys.bus, message)
            *_, listeners = await pipe.execute()
        return int(listeners)

    async def node_closed(self, node_id: str) -> None:
        message = orjson.dumps({"node_closed": node_id, "from": self.me}).decode()
        await self.redis.publish(self.keys.bus, message)

    def forget_session(self, session_id: str, code: int, reason: str) -> None:
        super().forget_session(session_id, code, reason)
        self.leases.forget(session_id)
        end = {"end": session_id, "code": code, "reason": reason, "from": self.me}
        self.writer.put("bus", orjson.dumps(end).decode())
        self.writer.put("forget", session_id)
        self._tidy(session_id)

    def drop_local(self, session_id: str, code: int, reason: str) -> None:
        super().forget_session(session_id, code, reason)  # here only: the others serve on
        self._tidy(session_id)

    # --- ownership (rule 1) --------------------------------------------------------------------

    async def claim(self, session_id: str) -> bool:
        return await self.leases.claim(session_id)

    async def release(self, session_id: str) -> None:
        await self.leases.release(session_id)

    async def unowned(self, session_ids: list[str]) -> list[str]:
        return await self.leases.unowned(session_ids)

    async def cursor(self, session_id: str) -> str | None:
        return await self.redis.get(self.keys.session(session_id, "cursor"))
