"""One edge WebSocket on the master (RAWP §9.4) with its own bounded send queue.

Rules:

1. Frames for the edge are queued without waiting (`offer`); a sender task writes them. A slow
   edge therefore never holds up the client link or the other edges of the session.
2. The queue is bounded by the size of the frames waiting in it (characters of frame text),
   not by their number: a burst — the replay after a reattach can be a whole client buffer,
   16 MiB by default — must not cut off an edge that reads as fast as it can. An edge whose
   backlog passes the bound is too slow: it is disconnected with close code 1013 ("try again
   later") and a reason, and may reconnect with a new ticket (A-22) and `last_message_id`.
3. `serve` ends when the edge closes, the sender fails, or the socket is kicked (rule 2 or the
   session ending); then the socket is closed with the recorded code and reason.
4. The sender and the receiver run in one `runtime.tasks.race` (issue 14 §6): the first to
   finish ends the other, and a cancellation of `serve` passes through to both. A kick cancels
   the sender (mid-write too), which ends the race: no third task waits for the kick, since a
   master holds thousands of these sockets, mostly idle (issue 20 §3). The
   edge going away mid-write (an `OSError` from the wire) is the end of the connection, not a
   fault; any other failure of a loop is logged here once, with its traceback, and the socket
   is closed with 1011.
5. Every frame already queued is taken at once and, when the wire can (`send_many`), written
   together, each still its own WebSocket frame: a flood from the client queues many frames
   between two turns of the sender, and a socket write per frame cost more than the relay's
   own work on it (issue 20).
6. A frame offered while the sender waits on an empty queue, not yet woken, is written at
   once by `offer` when the wire can do that without waiting (`write_now`): nothing is queued
   or being written before it, so the order holds, and the sender task is not woken for one
   frame. At 10,000 sessions sending a frame a second each, nearly every frame is such a
   frame (issue 35).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Protocol

from master.metrics import FRAME_ARRIVED, MasterMetrics
from runtime.tasks import race

log = logging.getLogger("rawp.master.edge.socket")

TOO_SLOW = 1013
GOING_AWAY = 1001
NORMAL = 1000
INTERNAL_ERROR = 1011
SEND_BATCH_CHARS = 256 * 1024  # taken off the queue per write at most (and one frame more)


class Wire(Protocol):
    """What the master needs of a WebSocket: Quart's `websocket` fits, and so does a test fake.
    A wire that also has `send_many(texts)` gets the frames queued at once (rule 5)."""

    async def send(self, data: str) -> None: ...
    async def receive(self) -> str | bytes: ...
    async def close(self, code: int, reason: str = "") -> None: ...


class EdgeSocket:
    def __init__(
        self,
        wire: Wire,
        *,
        user_id: str,
        session_id: str,
        node_id: str,
        max_backlog: int,
        metrics: MasterMetrics | None = None,
    ) -> None:
        self.wire = wire
        self.user_id = user_id
        self.session_id = session_id
        self.node_id = node_id
        self.max_backlog = max_backlog
        self.backlog = 0  # characters of frame text queued and not yet written
        # (frame text, when its client frame arrived: FRAME_ARRIVED.at, None if not timed). A bare
        # deque and one future while the sender waits, not an asyncio.Queue: a Queue holds
        # four deques and an Event for its whole life, and a master holds 10,000 of these
        # sockets mostly idle (issue 20 §3).
        self._queue: deque[tuple[str, float | None]] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self.metrics = metrics
        self.replayed: int | None = None  # frames replayed at attach (relay rule 4), if asked
        self._kicked = False
        self._sender: asyncio.Task | None = None  # the send loop's task while it runs
        self._write_now: Callable[[str], bool] | None = getattr(wire, "write_now", None)
        self.close_code = NORMAL
        self.close_reason = ""

    @property
    def open(self) -> bool:
        return not self._kicked

    def offer(self, text: str) -> bool:
        """Queue one frame (rule 1); past the bound the socket is kicked (rule 2)."""
        if self._kicked:
            return False
        if self.backlog + len(text) > self.max_backlog:
            self.kick(
                TOO_SLOW,
                "edge too slow: its backlog passed the limit; "
                "reconnect with a new ticket and last_message_id",
            )
            if self.metrics is not None:
                self.metrics.frames_dropped.labels("edge_too_slow").inc()
            return False
        waiter = self._waiter
        idle = waiter is not None and not waiter.done() and not self._queue
        # rule 6: the sender waits and nothing is ahead of this frame
        if idle and self._write_now is not None and self._write_now(text):
            if self.metrics is not None:
                tally = self.metrics.relay
                tally.to_edge += 1
                arrived = FRAME_ARRIVED.at
                if arrived is not None:
                    tally.observe(time.perf_counter() - arrived)
            return True
        self.backlog += len(text)
        self._queue.append((text, FRAME_ARRIVED.at))
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
        return True

    def kick(self, code: int, reason: str) -> None:
        """Close this socket soon with `code` and `reason` (idempotent: the first reason wins)."""
        if self._kicked:
            return
        self.close_code, self.close_reason = code, reason[:120]  # a close reason is ≤ 123 bytes
        self._kicked = True
        if self._sender is not None:
            self._sender.cancel()  # rule 4: ends the race, as the edge leaving would

    async def serve(self, on_frame: Callable[[str | bytes], Awaitable[None]]) -> None:
        """Run until the edge leaves or is kicked (rule 3)."""
        try:
            await race(self._send_loop(), self._receive_loop(on_frame))
        except OSError as exc:  # rule 4: the edge went away while we wrote or read
            log.info("edge of session %s: the socket went away: %r", self.session_id, exc)
        except Exception:
            log.exception("edge of session %s: the socket failed", self.session_id)
            self.kick(INTERNAL_ERROR, "internal error")
        finally:
            self._kicked = True
        try:
            await asyncio.wait_for(self.wire.close(self.close_code, self.close_reason), 5)
        except (OSError, RuntimeError, TimeoutError) as exc:
            # Closed already (the peer left first: the server refuses a second close) or the
            # peer does not answer: the socket is gone either way.
            log.debug("edge of session %s: closing: %r", self.session_id, exc)

    async def _send_loop(self) -> None:
        if self._kicked:  # kicked before serving: nothing to send
            return
        self._sender = asyncio.current_task()
        try:
            await self._send_queued()
        finally:
            self._sender = None

    async def _send_queued(self) -> None:
        queue = self._queue
        send_many = getattr(self.wire, "send_many", None)
        while True:
            while not queue:
                self._waiter = asyncio.get_running_loop().create_future()
                try:
                    await self._waiter
                finally:
                    self._waiter = None
            batch = [queue.popleft()]  # rule 5: every frame queued, up to a bound, at once
            chars = len(batch[0][0])
            while chars < SEND_BATCH_CHARS and queue:
                batch.append(queue.popleft())
                chars += len(batch[-1][0])
            if send_many is not None:
                await send_many([text for text, _ in batch])
            else:
                for text, _ in batch:
                    await self.wire.send(text)
            self.backlog -= chars
            if self.metrics is not None:
                self.metrics.relay.to_edge += len(batch)
                now = time.perf_counter()
                latencies = [now - arrived for _, arrived in batch if arrived is not None]
                self.metrics.relay.observe_many(latencies)

    async def _receive_loop(self, on_frame: Callable[[str | bytes], Awaitable[None]]) -> None:
        while True:
            data = await self.wire.receive()
            await on_frame(data)
