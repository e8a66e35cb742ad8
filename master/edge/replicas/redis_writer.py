"""The one ordered writer of a master replica's relay state to Redis (issue 9; issue 14 §6).

Rules:

1. Writes leave in the order they were queued, through one queue and one connection, in
   pipelines of up to `BATCH` entries; the frames of one session queued meanwhile go as one
   script call (`PUBLISH_SCRIPT`) and one published message, so a session's order is Redis's.
2. Every entry is idempotent, so a batch that failed half-way is simply sent again: a frame
   carries its `message_id` (the script drops one already written), a greeting is a hash
   field, a forget is a delete; an end notice on the bus may arrive twice and is harmless.
   A batch is retried with a growing wait while Redis is away, and nothing is dropped.
3. The queue is bounded: producers `await room()` before `put` (the client link's pump does,
   so a Redis that is away slows the pump, the client's socket and finally the client's own
   bounded buffer — never this process's memory). `put` itself never waits.
4. A frame call refused because the lease is another replica's (fencing, -1) reports the
   session to `on_fenced`: this replica stops holding it.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable

from redis.asyncio import Redis
from redis.exceptions import RedisError

from master.edge.replicas.redis_scripts import PUBLISH_SCRIPT, SESSION_TTL_MS, Keys

log = logging.getLogger("rawp.master.edge.redis_writer")

BATCH = 512  # writes per pipeline
QUEUE_BOUND = 8192  # entries waiting before producers wait (rule 3)
RETRY_WAITS = (0.05, 0.1, 0.2, 0.5, 1.0)  # seconds between attempts while Redis is away


class OrderedWriter:
    def __init__(
        self,
        redis: Redis,
        keys: Keys,
        *,
        me: str,
        replay_frames: int,
        lease_ms: int,
        on_fenced: Callable[[str], Awaitable[None]],
        bound: int = QUEUE_BOUND,
    ) -> None:
        self._redis = redis
        self._keys = keys
        self._me = me
        self._replay_frames = replay_frames
        self._lease_ms = lease_ms
        self._on_fenced = on_fenced
        self._bound = bound
        self._queue: deque[tuple] = deque()
        self._wake = asyncio.Event()
        self._room = asyncio.Event()
        self._room.set()
        self._idle = asyncio.Event()
        self._idle.set()
        self._publish = redis.register_script(PUBLISH_SCRIPT)

    @property
    def idle(self) -> bool:
        """Nothing queued and nothing in flight."""
        return self._idle.is_set()

    def put(self, *entry) -> None:
        """Queue one write (rule 3: never waits; producers waited for room first)."""
        self._queue.append(entry)
        self._idle.clear()
        self._wake.set()
        if len(self._queue) >= self._bound:
            self._room.clear()

    async def room(self) -> None:
        """Rule 3: wait while the queue is at its bound."""
        await self._room.wait()

    def has_room(self) -> bool:
        return self._room.is_set()

    async def flush(self, within: float) -> bool:
        """Wait until every queued write has left; False if they had not `within` seconds."""
        try:
            await asyncio.wait_for(self._idle.wait(), within)
        except TimeoutError:
            return False
        return True

    async def run(self) -> None:
        """Rules 1, 2 and 4, until cancelled."""
        failures = 0
        while True:
            if not self._queue:
                self._idle.set()
                self._wake.clear()
                await self._wake.wait()
            batch = [self._queue[i] for i in range(min(BATCH, len(self._queue)))]
            try:
                fenced = await self._send(batch)
            except RedisError as exc:  # rule 2: idempotent entries, so send them again
                wait = RETRY_WAITS[min(failures, len(RETRY_WAITS) - 1)]
                failures += 1
                log.warning("relay: Redis write failed (attempt %d), retrying: %s", failures, exc)
                await asyncio.sleep(wait)
                continue
            failures = 0
            for _ in batch:
                self._queue.popleft()
            if len(self._queue) < self._bound:
                self._room.set()
            for session_id in fenced:
                await self._on_fenced(session_id)

    async def _send(self, batch: list[tuple]) -> list[str]:
        """Write `batch` in order: each run of frames as one script call per session (order
        is per session); returns the sessions whose lease turned out to be another's."""
        calls: list[str | None] = []  # per pipelined command: the session of a frame call
        async with self._redis.pipeline(transaction=False) as pipe:
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
        k = self._keys
        keys = [k.own(sid), *(k.session(sid, what) for what in ("seen", "order", "frames"))]
        keys.append(k.session(sid, "cursor"))
        head = [self._me, k.to_edges(sid), self._replay_frames, SESSION_TTL_MS, self._lease_ms]
        await self._publish(keys=keys, args=head + frames, client=pipe)

    def _other_write(self, pipe, entry: tuple) -> int:
        """Queue a write that is not a frame; returns how many commands it queued."""
        kind, k = entry[0], self._keys
        if kind == "greeting":
            _, sid, type, text = entry
            pipe.hset(k.session(sid, "greeting"), type, text)
            pipe.pexpire(k.session(sid, "greeting"), SESSION_TTL_MS)
            return 2
        if kind == "bus":
            pipe.publish(k.bus, entry[1])
            return 1
        if kind == "forget":
            sid = entry[1]
            names = ("seen", "order", "frames", "cursor", "greeting")
            pipe.delete(*(k.session(sid, what) for what in names), k.own(sid))
            return 1
        return 0  # the end-of-batch marker
