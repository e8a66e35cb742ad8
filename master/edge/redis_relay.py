"""The relay across several master replicas, through Redis (issue 9, docs/scale-out.md).

A session's client link is held by exactly one replica, its *owner*; its edge sockets may be
on any replica. Rules:

1. Ownership is a lease, `own:{sid}` = this replica's id, set with NX and an expiry and renewed
   by compare-and-extend; a replica that finds its lease gone or taken stops holding the link
   (`ownership_lost`), and one that dies simply stops renewing — within the lease the session
   is free and another replica's sweep (master.edge.sessions) takes it over.
2. A client frame is written by the owner with one script call that checks the lease (a
   replica that lost it cannot write: fencing), drops a `message_id` already written (the
   client's replay after a takeover may repeat what the old owner wrote), appends the frame
   to the session's stream (bounded like the in-process ring, for edges that reconnect with
   `last_message_id`), moves the takeover cursor, and publishes it on the session's channel.
   Writes leave in order through one queue and one connection, batched in pipelines — the
   frames of one session queued meanwhile go as one script call and one published message —
   so `publish` never waits and the session's order is Redis's order.
3. Every replica, the owner included, delivers a session's frames to its own edge sockets from
   the session's channel, which it listens to while it holds edge sockets of the session.
   A socket attaching is greeted and replayed from Redis *after* the subscription is
   confirmed, with live frames held back meanwhile and deduplicated against the replay: no
   gap, no repeat (relay rule 4).
4. An edge frame on a replica that does not own the session is published on the session's
   client channel, which only the owner listens to; when nobody listens, this replica tries
   to take the session over (`take_over`) and sends it itself; else it retries briefly, then
   says False (the edge gets `CLIENT_UNAVAILABLE` and may retry).
5. Node pushes (`node.config.changed`), node unregistrations (§3.5) and session ends go on
   one bus channel every replica listens to. Control-frame claims (E-WS-11) are `SET NX`
   keys with an expiry.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections import deque

import orjson
from redis.asyncio import Redis
from redis.exceptions import RedisError

from master.edge.edge_socket import EdgeSocket
from master.edge.redis_scripts import (
    PUBLISH_SCRIPT,
    RELEASE_SCRIPT,
    RENEW_SCRIPT,
    stream_position,
)
from master.edge.relay import (
    GREETING_TYPES,
    InProcessRelay,
    OwnerHooks,
    history_frame,
    replay_after,
)

log = logging.getLogger("rawp.master.edge.redis_relay")

NOT_A_CURSOR = (*GREETING_TYPES[:2], "session.history")  # not in the client's replay buffer
SESSION_TTL_MS = 24 * 3600 * 1000  # what an idle session leaves in Redis lives a day at most
CONTROL_TTL_MS = 3600 * 1000
BATCH = 512  # writes per pipeline


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
    ) -> None:
        super().__init__(replay_frames, dedupe_window)
        self.me = secrets.token_hex(8)
        self._url = url
        self._prefix = prefix
        self._lease_ms = int(lease_seconds * 1000)
        self._handoff = handoff_seconds
        self._redis: Redis | None = None
        self._pubsub = None
        self._hooks: OwnerHooks | None = None
        self._writes: deque[tuple] = deque()
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task] = []
        self._owned: set[str] = set()
        self._subscribed: set[str] = set()
        self._confirmed: dict[str, asyncio.Event] = {}
        self._sub_lock = asyncio.Lock()
        self._held: dict[str, dict[EdgeSocket, list[tuple[str, str]]]] = {}  # attaching
        self._horizons: dict[EdgeSocket, tuple[int, int]] = {}  # last stream id replayed
        self._bus = prefix + "bus"

    # --- keys and channels ---------------------------------------------------------------------

    def _key(self, session_id: str, what: str) -> str:
        return f"{self._prefix}s:{{{session_id}}}:{what}"  # {…}: one cluster slot a session

    def _own(self, session_id: str) -> str:
        return f"{self._prefix}own:{{{session_id}}}"

    def _to_edges(self, session_id: str) -> str:
        return f"{self._prefix}e:{session_id}"

    def _to_client(self, session_id: str) -> str:
        return f"{self._prefix}c:{session_id}"

    @property
    def redis(self) -> Redis:
        assert self._redis is not None, "the relay has not started"
        return self._redis

    # --- lifecycle -----------------------------------------------------------------------------

    async def start(self, hooks: OwnerHooks) -> None:
        self._hooks = hooks
        # A timeout on every command: a Redis that stops answering must fail calls (and so
        # expire this replica's leases, `_renew_loop`), not hang them.
        self._redis = Redis.from_url(
            self._url, decode_responses=True, socket_connect_timeout=5, socket_timeout=5
        )
        self._publish_script = self._redis.register_script(PUBLISH_SCRIPT)
        self._renew_script = self._redis.register_script(RENEW_SCRIPT)
        self._release_script = self._redis.register_script(RELEASE_SCRIPT)
        self._pubsub = self._redis.pubsub()
        await self._pubsub.subscribe(self._bus)  # confirmed by the first message read below
        self._subscribed.add(self._bus)
        self._tasks = [
            asyncio.create_task(self._read_loop(), name="redis-relay-read"),
            asyncio.create_task(self._write_loop(), name="redis-relay-write"),
            asyncio.create_task(self._renew_loop(), name="redis-relay-renew"),
        ]
        log.info("relay: shared through Redis as replica %s", self.me)

    async def close(self) -> None:
        await self._flush()
        for session_id in list(self._owned):
            await self.release(session_id)
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self._pubsub is not None:
            with contextlib.suppress(Exception):
                await self._pubsub.aclose()
        if self._redis is not None:
            await self._redis.aclose()

    # --- client → edges (rules 2, 3) -----------------------------------------------------------

    def publish(self, session_id: str, message_id: str, text: str, kind: str = "") -> None:
        self._write("frame", session_id, message_id, text, kind not in NOT_A_CURSOR)

    def remember_greeting(self, session_id: str, type: str, text: str) -> None:
        self._write("greeting", session_id, type, text)

    async def _greeting(self, session_id: str) -> list[str]:
        texts = await self.redis.hmget(self._key(session_id, "greeting"), list(GREETING_TYPES))
        return [text for text in texts if text]

    async def attach(self, edge: EdgeSocket, last_message_id: str | None = None) -> None:
        session_id = edge.session_id
        held: list[tuple[str, str]] = []
        self._held.setdefault(session_id, {})[edge] = held
        try:
            await self._subscribe(self._to_edges(session_id))
            for text in await self._greeting(session_id):
                edge.offer(text)
            horizon = None  # the stream position the replay reached
            if last_message_id:
                entries = await self.redis.xrange(self._key(session_id, "frames"))
                missed, found = replay_after(
                    [(f["m"], f["t"]) for _, f in entries], last_message_id
                )
                horizon = stream_position(entries[-1][0]) if entries else None
                edge.offer(history_frame(session_id, last_message_id, len(missed)))
                for text in missed:
                    edge.offer(text)
                if not found:
                    log.info("session %s: an edge's cursor is no longer kept", session_id)
            for at, text in held:  # arrived while replaying: only what the replay did not hold
                if horizon is None or stream_position(at) > horizon:
                    edge.offer(text)
            # A frame the replay held may still be on its way from the channel (the reply to
            # XRANGE can overtake the published message): the horizon drops it on arrival.
            if horizon is not None:
                self._horizons[edge] = horizon
            self._hub(session_id).edges.add(edge)
            self._by_node.setdefault(edge.node_id, set()).add(edge)
        finally:
            holding = self._held.get(session_id, {})
            holding.pop(edge, None)
            if not holding:
                self._held.pop(session_id, None)

    def detach(self, edge: EdgeSocket) -> None:
        super().detach(edge)
        self._horizons.pop(edge, None)
        self._tidy(edge.session_id)

    def _tidy(self, session_id: str) -> None:
        """Stop listening for a session this replica no longer serves any socket of."""
        hub = self._hubs.get(session_id)
        if session_id in self._held or (hub is not None and hub.edges):
            return
        if hub is not None and hub.client is None:
            del self._hubs[session_id]
        asyncio.get_running_loop().create_task(self._unsubscribe(self._to_edges(session_id)))

    # --- edge → client (rule 4) ----------------------------------------------------------------

    def bind_client(self, session_id, link) -> None:
        super().bind_client(session_id, link)
        self._owned.add(session_id)
        asyncio.get_running_loop().create_task(self._subscribe(self._to_client(session_id)))

    def unbind_client(self, session_id: str) -> None:
        super().unbind_client(session_id)
        asyncio.get_running_loop().create_task(self._unsubscribe(self._to_client(session_id)))

    async def to_client(self, session_id: str, text: str) -> bool:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._handoff
        while True:
            hub = self._hubs.get(session_id)
            if hub is not None and hub.client is not None:
                return await hub.client.send(text)
            try:
                if await self.redis.publish(self._to_client(session_id), text):
                    return True  # the owner listens: it takes it from here
                assert self._hooks is not None
                if await self._hooks.take_over(session_id):  # held here now: our link sends it
                    hub = self._hubs.get(session_id)
                    return (
                        hub is not None and hub.client is not None and (await hub.client.send(text))
                    )
            except RedisError as exc:
                log.warning("session %s: Redis refused an edge frame: %s", session_id, exc)
            if loop.time() >= deadline:
                return False
            await asyncio.sleep(0.1)

    # --- control claims, node pushes, ends (rule 5) --------------------------------------------

    async def claim_control(self, session_id: str, message_id: str) -> bool:
        key = self._key(session_id, f"control:{message_id}")
        return bool(await self.redis.set(key, "1", nx=True, px=CONTROL_TTL_MS))

    async def release_control(self, session_id: str, message_id: str) -> None:
        await self.redis.delete(self._key(session_id, f"control:{message_id}"))

    async def publish_node(self, node_id: str, text: str) -> int:
        message = orjson.dumps({"node": node_id, "text": text}).decode()
        return int(await self.redis.publish(self._bus, message))

    async def node_closed(self, node_id: str) -> None:
        message = orjson.dumps({"node_closed": node_id, "from": self.me}).decode()
        await self.redis.publish(self._bus, message)

    def forget_session(self, session_id: str, code: int, reason: str) -> None:
        super().forget_session(session_id, code, reason)
        self._owned.discard(session_id)
        end = {"end": session_id, "code": code, "reason": reason, "from": self.me}
        self._write("bus", orjson.dumps(end).decode())
        self._write("forget", session_id)
        self._tidy(session_id)

    def drop_local(self, session_id: str, code: int, reason: str) -> None:
        super().forget_session(session_id, code, reason)  # here only: the others serve on
        self._tidy(session_id)

    # --- ownership (rule 1) --------------------------------------------------------------------

    async def claim(self, session_id: str) -> bool:
        own = self._own(session_id)
        if await self.redis.set(own, self.me, nx=True, px=self._lease_ms) or (
            await self.redis.get(own) == self.me
        ):
            self._owned.add(session_id)
            return True
        return False

    async def release(self, session_id: str) -> None:
        self._owned.discard(session_id)
        with contextlib.suppress(RedisError):
            await self._release_script(keys=[self._own(session_id)], args=[self.me])

    async def unowned(self, session_ids: list[str]) -> list[str]:
        if not session_ids:
            return []
        owners = await self.redis.mget([self._own(sid) for sid in session_ids])
        return [sid for sid, owner in zip(session_ids, owners, strict=True) if owner is None]

    async def cursor(self, session_id: str) -> str | None:
        return await self.redis.get(self._key(session_id, "cursor"))

    async def _renew_loop(self) -> None:
        loop = asyncio.get_running_loop()
        renewed_at = loop.time()
        while True:
            await asyncio.sleep(self._lease_ms / 3000)
            owned = list(self._owned)
            if not owned:
                renewed_at = loop.time()
                continue
            try:
                async with self.redis.pipeline(transaction=False) as pipe:
                    for session_id in owned:
                        await self._renew_script(
                            keys=[self._own(session_id)],
                            args=[self.me, self._lease_ms],
                            client=pipe,
                        )
                    results = await pipe.execute()
            except (RedisError, OSError) as exc:
                log.warning("relay: could not renew session leases: %s", exc)
                if loop.time() - renewed_at > self._lease_ms / 1000:
                    # Cut off from Redis longer than a lease: to the others every lease of ours
                    # has expired and may be taken; holding on would contest the client's socket.
                    for session_id in owned:
                        await self._lost(session_id, "its lease expired while Redis was away")
                continue
            renewed_at = loop.time()
            for session_id, kept in zip(owned, results, strict=True):
                if not kept and session_id in self._owned:
                    await self._lost(session_id)

    async def _lost(self, session_id: str, why: str = "another replica holds it now") -> None:
        self._owned.discard(session_id)
        log.warning("session %s: letting its client link go: %s", session_id, why)
        assert self._hooks is not None
        await self._hooks.ownership_lost(session_id)

    # --- the one writer (rule 2) ---------------------------------------------------------------

    def _write(self, *entry) -> None:
        self._writes.append(entry)
        self._wake.set()

    async def _flush(self) -> None:
        """Wait until every queued write has left (shutdown)."""
        for _ in range(100):
            if not self._writes:
                return
            await asyncio.sleep(0.02)

    async def _write_loop(self) -> None:
        while True:
            if not self._writes:
                self._wake.clear()
                await self._wake.wait()
            batch = [self._writes[i] for i in range(min(BATCH, len(self._writes)))]
            try:
                fenced = await self._send(batch)
            except RedisError as exc:  # keep the batch and try again: nothing is dropped
                log.warning("relay: Redis write failed, retrying: %s", exc)
                await asyncio.sleep(0.2)
                continue
            for _ in batch:
                self._writes.popleft()
            for session_id in fenced:
                if session_id in self._owned:
                    await self._lost(session_id)

    async def _send(self, batch: list[tuple]) -> list[str]:
        """Write `batch` in order: each run of frames as one script call per session (order
        is per session); returns the sessions whose lease turned out to be another's."""
        calls: list[str | None] = []  # per pipelined command: the session of a frame call
        async with self.redis.pipeline(transaction=False) as pipe:
            run: dict[str, list] = {}
            for entry in [*batch, ("end of batch",)]:
                if entry[0] == "frame":
                    _, sid, message_id, text, is_cursor = entry
                    run.setdefault(sid, []).extend((message_id, text, "1" if is_cursor else "0"))
                    continue
                for sid, frames in run.items():
                    await self._frames_call(pipe, sid, frames)
                    calls.append(sid)
                run = {}
                calls.extend([None] * self._other_write(pipe, entry))
            results = await pipe.execute()
        return [sid for sid, result in zip(calls, results, strict=True) if sid and result == -1]

    async def _frames_call(self, pipe, sid: str, frames: list) -> None:
        keys = [self._own(sid)] + [self._key(sid, k) for k in ("seen", "order", "frames", "cursor")]
        head = [self.me, self._to_edges(sid), self._replay_frames, SESSION_TTL_MS, self._lease_ms]
        await self._publish_script(keys=keys, args=head + frames, client=pipe)

    def _other_write(self, pipe, entry: tuple) -> int:
        """Queue a write that is not a frame; returns how many commands it queued."""
        kind = entry[0]
        if kind == "greeting":
            _, sid, type, text = entry
            pipe.hset(self._key(sid, "greeting"), type, text)
            pipe.pexpire(self._key(sid, "greeting"), SESSION_TTL_MS)
            return 2
        if kind == "bus":
            pipe.publish(self._bus, entry[1])
            return 1
        if kind == "forget":
            sid = entry[1]
            keys = [self._key(sid, k) for k in ("seen", "order", "frames", "cursor", "greeting")]
            pipe.delete(*keys, self._own(sid))
            return 1
        return 0  # the end-of-batch marker

    # --- the one reader (rules 3, 4, 5) --------------------------------------------------------

    async def _subscribe(self, channel: str) -> None:
        async with self._sub_lock:
            if channel in self._subscribed:
                return
            confirmed = self._confirmed[channel] = asyncio.Event()
            await self._pubsub.subscribe(channel)
            try:
                await asyncio.wait_for(confirmed.wait(), 10)
            finally:
                self._confirmed.pop(channel, None)
            self._subscribed.add(channel)

    async def _unsubscribe(self, channel: str) -> None:
        async with self._sub_lock:
            session_id = channel.rsplit(":", 1)[-1]
            hub = self._hubs.get(session_id)
            still = (
                (hub is not None and hub.client is not None)
                if channel == self._to_client(session_id)
                else (session_id in self._held or (hub is not None and bool(hub.edges)))
            )
            if still or channel not in self._subscribed:
                return
            self._subscribed.discard(channel)
            with contextlib.suppress(RedisError):
                await self._pubsub.unsubscribe(channel)

    async def _read_loop(self) -> None:
        edges_prefix, client_prefix = self._prefix + "e:", self._prefix + "c:"
        while True:
            try:
                message = await self._pubsub.get_message(timeout=1.0)
            except RedisError as exc:
                log.warning("relay: Redis subscription failed, retrying: %s", exc)
                await asyncio.sleep(0.5)
                continue
            if message is None:
                continue
            channel, data = message["channel"], message["data"]
            if message["type"] == "subscribe":
                confirmed = self._confirmed.get(channel)
                if confirmed is not None:
                    confirmed.set()
                continue
            if message["type"] != "message":
                continue
            try:
                if channel.startswith(edges_prefix):
                    self._deliver(channel[len(edges_prefix) :], data)
                elif channel.startswith(client_prefix):
                    await self._hand_to_client(channel[len(client_prefix) :], data)
                elif channel == self._bus:
                    await self._on_bus(orjson.loads(data))
            except Exception:  # one bad message must not stop the replica's relay
                log.exception("relay: could not handle a message on %s", channel)

    def _deliver(self, session_id: str, data: str) -> None:
        flat = orjson.loads(data)  # [stream id, text, …] from PUBLISH_SCRIPT
        frames = list(zip(flat[::2], flat[1::2], strict=True))
        for held in self._held.get(session_id, {}).values():
            held.extend(frames)
        hub = self._hubs.get(session_id)
        if hub is None:
            return
        for edge in list(hub.edges):
            horizon = self._horizons.get(edge)
            for at, text in frames:
                if horizon is not None:
                    if stream_position(at) <= horizon:
                        continue  # replayed to this socket already
                    del self._horizons[edge]  # past the replay: later frames are all new
                    horizon = None
                edge.offer(text)

    async def _hand_to_client(self, session_id: str, text: str) -> None:
        hub = self._hubs.get(session_id)
        if hub is None or hub.client is None or not await hub.client.send(text):
            log.warning("session %s: an edge frame from another replica was not taken", session_id)

    async def _on_bus(self, message: dict) -> None:
        if "node" in message:
            self.offer_node(message["node"], message["text"])
        elif "node_closed" in message and message.get("from") != self.me:
            assert self._hooks is not None
            asyncio.get_running_loop().create_task(self._hooks.node_closed(message["node_closed"]))
        elif "end" in message and message.get("from") != self.me:
            session_id = message["end"]
            self._owned.discard(session_id)
            self.drop_local(session_id, message["code"], message["reason"])
            assert self._hooks is not None
            asyncio.get_running_loop().create_task(self._hooks.session_ended(session_id))
