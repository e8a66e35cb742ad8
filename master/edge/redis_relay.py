"""The relay across several master replicas, through Redis (issue 9, docs/scale-out.md).

A session's client link is held by exactly one replica, its *owner*; its edge sockets may be
on any replica. The relay is composed of parts with one job each (issue 14 §6): `Leases`
(who holds a session, master.edge.redis_leases), `OrderedWriter` (frames, greetings and
notices written in order, bounded and idempotent, master.edge.redis_writer) and
`Subscriptions` (the one pub/sub connection and its reader, master.edge.redis_subscriptions),
with every task owned by one `TaskOwner`. Local sockets are kept as in one process (the
inherited hubs). Rules:

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
import time

import orjson
from redis.asyncio import Redis
from redis.exceptions import RedisError

from master.edge.edge_socket import EdgeSocket
from master.edge.redis_leases import Leases
from master.edge.redis_scripts import NODE_FRAMES_KEPT, SESSION_TTL_MS, Keys, stream_position
from master.edge.redis_subscriptions import Subscriptions
from master.edge.redis_writer import OrderedWriter
from master.edge.relay import (
    GREETING_TYPES,
    NOT_A_CURSOR,
    InProcessRelay,
    OwnerHooks,
    history_frame,
    kind_and_id,
    resume_from_client,
)
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
        self._prefix = prefix
        self.keys = Keys(prefix)
        self._lease_ms = int(lease_seconds * 1000)
        self._handoff = handoff_seconds
        self._deliver = deliver_seconds
        self._redis: Redis | None = None
        self._tasks = TaskOwner("redis relay", log)
        self._held: dict[str, dict[EdgeSocket, list[tuple[str, str]]]] = {}  # attaching
        self._horizons: dict[EdgeSocket, tuple[int, int]] = {}  # last stream id replayed
        self._skips: dict[EdgeSocket, set[str]] = {}  # ids the client's replay had (rule 3)
        self._replies: dict[str, asyncio.Future[bool]] = {}  # hand-offs awaiting an answer

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
        self.subscriptions = Subscriptions(self._redis, self._on_message)
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
        session_id = edge.session_id
        held: list[tuple[str, str]] = []
        self._held.setdefault(session_id, {})[edge] = held
        try:
            await self.subscriptions.subscribe(self.keys.to_edges(session_id))
            horizon, skip = await self._replay(edge, last_message_id)
            for at, text in held:  # arrived while replaying: only what the replay did not hold
                if horizon is not None and stream_position(at) <= horizon:
                    continue
                kind, message_id = kind_and_id(text)
                if skip and message_id in skip:
                    continue
                if kind not in NOT_A_CURSOR:
                    skip = set()  # past the client's replay: later frames are all new
                edge.offer(text)
            # A frame the replay held may still be on its way from the channel (the reply to
            # XRANGE can overtake the published message): the horizon drops it on arrival.
            if horizon is not None:
                self._horizons[edge] = horizon
            if skip:
                self._skips[edge] = skip
            self._hub(session_id).edges.add(edge)
            self._by_node.setdefault(edge.node_id, set()).add(edge)
        finally:
            holding = self._held.get(session_id, {})
            holding.pop(edge, None)
            if not holding:
                self._held.pop(session_id, None)

    async def _replay(
        self, edge: EdgeSocket, last_message_id: str | None
    ) -> tuple[tuple[int, int] | None, set[str]]:
        """Greet or replay `edge` (rule 3); returns the stream position the replay reached and
        the ids of a replay from the client."""
        session_id = edge.session_id
        if not last_message_id:
            for text in await self.greeting_texts(session_id):
                edge.offer(text)
            return None, set()
        entries = await self.redis.xrange(self.keys.session(session_id, "frames"))
        horizon = stream_position(entries[-1][0]) if entries else None
        ids = [fields["m"] for _, fields in entries]
        if last_message_id not in ids:
            kept = [fields["t"] for _, fields in entries]
            replayed = await resume_from_client(self, edge, last_message_id, kept)
            return horizon, set(replayed)
        at = ids.index(last_message_id)
        since = entries[at][0]
        merged = [(stream_position(i), f["t"]) for i, f in entries[at + 1 :]]
        node_key = self.keys.node_frames(edge.node_id)
        merged += [
            (stream_position(i), f["t"])
            for i, f in await self.redis.xrange(node_key, min=f"({since}")
        ]
        merged.sort(key=lambda entry: entry[0])
        edge.replayed = len(merged)
        edge.offer(history_frame(session_id, last_message_id, len(merged)))
        for _, text in merged:
            edge.offer(text)
        return horizon, set()

    def detach(self, edge: EdgeSocket) -> None:
        super().detach(edge)
        self._horizons.pop(edge, None)
        self._skips.pop(edge, None)
        self._tidy(edge.session_id)

    def _tidy(self, session_id: str) -> None:
        """Stop listening for a session this replica no longer serves any socket of."""
        hub = self._hubs.get(session_id)
        if session_id in self._held or (hub is not None and hub.edges):
            return
        if hub is not None and hub.client is None:
            del self._hubs[session_id]
        channel = self.keys.to_edges(session_id)
        if self._tasks.running:
            self._tasks.spawn(
                self.subscriptions.unsubscribe(channel, lambda: self._serves(session_id)),
                name=f"unsubscribe {channel}",
            )

    def _serves(self, session_id: str) -> bool:
        hub = self._hubs.get(session_id)
        return session_id in self._held or (hub is not None and bool(hub.edges))

    def _holds(self, session_id: str) -> bool:
        hub = self._hubs.get(session_id)
        return hub is not None and hub.client is not None

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
                self.subscriptions.unsubscribe(channel, lambda: self._holds(session_id)),
                name=f"unsubscribe {channel}",
            )

    async def to_client(self, session_id: str, text: str) -> bool:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._handoff
        while True:
            hub = self._hubs.get(session_id)
            if hub is not None and hub.client is not None:
                return await hub.client.send(text)
            try:
                answered = await self._hand_off(session_id, text)
                if answered is not None:
                    return answered  # the owner listened: its answer stands
                assert self.hooks is not None
                if await self.hooks.take_over(session_id):  # held here now: our link sends it
                    hub = self._hubs.get(session_id)
                    return (
                        hub is not None and hub.client is not None and (await hub.client.send(text))
                    )
            except RedisError as exc:
                log.warning("session %s: Redis refused an edge frame: %s", session_id, exc)
            if loop.time() >= deadline:
                return False
            await asyncio.sleep(0.1)

    async def _hand_off(self, session_id: str, text: str) -> bool | None:
        """Rule 4: the owner's answer, False when it did not answer in time, None when no
        replica listens for the session's client."""
        token = secrets.token_hex(8)
        answer = self._replies[token] = asyncio.get_running_loop().create_future()
        try:
            message = {
                "id": token,
                "text": text,
                "reply": self.keys.replies(self.me),
                "until": time.time() + self._deliver,  # wall clock: replicas share it (NTP)
            }
            listeners = await self.redis.publish(
                self.keys.to_client(session_id), orjson.dumps(message).decode()
            )
            if not listeners:
                return None
            try:
                return await asyncio.wait_for(answer, self._deliver + 1.0)
            except TimeoutError:
                log.warning("session %s: the holder did not take an edge frame", session_id)
                return False
        finally:
            self._replies.pop(token, None)

    async def _take_hand_off(self, session_id: str, data: str) -> None:
        """The owner's side of rule 4 (an owned task: the link may wait for a reattach)."""
        message = orjson.loads(data)
        ok = False
        hub = self._hubs.get(session_id)
        if time.time() >= message["until"]:
            log.warning("session %s: an edge frame arrived after its deadline", session_id)
        elif hub is not None and hub.client is not None:
            ok = await hub.client.send(message["text"])
        answer = orjson.dumps({"answer": message["id"], "ok": ok}).decode()
        await self.redis.publish(message["reply"], answer)

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

    # --- the reader (rules 3, 4, 5) ------------------------------------------------------------

    async def _on_message(self, channel: str, data: str) -> None:
        prefix = self._prefix
        if channel.startswith(prefix + "e:"):
            self._deliver_frames(channel[len(prefix) + 2 :], data)
        elif channel.startswith(prefix + "c:"):
            session_id = channel[len(prefix) + 2 :]
            self._tasks.spawn(self._take_hand_off(session_id, data), name="edge frame hand-off")
        elif channel == self.keys.replies(self.me):
            answer = orjson.loads(data)
            waiting = self._replies.get(answer["answer"])
            if waiting is not None and not waiting.done():
                waiting.set_result(bool(answer["ok"]))
        elif channel == self.keys.bus:
            self._on_bus(orjson.loads(data))

    def _deliver_frames(self, session_id: str, data: str) -> None:
        flat = orjson.loads(data)  # [stream id, text, …] from PUBLISH_SCRIPT
        frames = list(zip(flat[::2], flat[1::2], strict=True))
        for held in self._held.get(session_id, {}).values():
            held.extend(frames)
        hub = self._hubs.get(session_id)
        if hub is None:
            return
        for edge in list(hub.edges):
            for at, text in frames:
                if self._replayed_already(edge, at, text):
                    continue
                edge.offer(text)

    def _replayed_already(self, edge: EdgeSocket, at: str, text: str) -> bool:
        horizon = self._horizons.get(edge)
        if horizon is not None:
            if stream_position(at) <= horizon:
                return True  # replayed to this socket from the stream already
            del self._horizons[edge]  # past the replay: later frames are all new
        skip = self._skips.get(edge)
        if skip is not None:
            kind, message_id = kind_and_id(text)
            if message_id in skip:
                return True  # the client's replay had it
            if kind not in NOT_A_CURSOR:  # a reattached client's greeting: its replay follows
                del self._skips[edge]
        return False

    def _on_bus(self, message: dict) -> None:
        assert self.hooks is not None
        if "node" in message:
            self.offer_node(message["node"], message["text"])
        elif "node_closed" in message and message.get("from") != self.me:
            node_id = message["node_closed"]
            self._tasks.spawn(self.hooks.node_closed(node_id), name=f"node {node_id} closed")
        elif "end" in message and message.get("from") != self.me:
            session_id = message["end"]
            self.leases.forget(session_id)
            self.drop_local(session_id, message["code"], message["reason"])
            self._tasks.spawn(self.hooks.session_ended(session_id), name=f"{session_id} ended")
