"""The order in which one replica spends the shared platform budget (issue 19 §5).

`BudgetQueue.admit(...)` returns once the call may be sent (True) or, for a status that is no
longer worth sending, at once with False. Calls that spend the same buckets wait in one lane;
one dispatcher task per busy lane (owned by the queue's TaskOwner, gone when the lane empties)
asks the buckets (gateway.replicas.platform_budget) for a token for the lane's most urgent call and
lets it go.

Rules:

1. Most urgent first: ANSWER, then CHUNK, then STATUS; FIFO within a priority.
2. Content keeps its order per conversation: a kept call (anything but a droppable status) is
   never overtaken by a later kept call of the same conversation. When an ANSWER is most
   urgent, the earlier kept calls of its conversation go first, at its priority, so an answer
   is never reordered and never waits behind other conversations' chunks.
3. Droppable statuses (typing, a status text) are coalesced per (conversation, kind): a newer
   one replaces the one still waiting, which returns False. One that has waited longer than
   `late_s` when its turn comes is dropped (False): it would show something already stale.
   Content, approvals, reactions and a status being cleared are never dropped.
4. Bounded: at most `max_waiting` calls wait per lane; past it a droppable status is dropped
   at once and a kept call waits for room (backpressure, never loss). Lanes are removed when
   empty, so their number is bounded by the calls waiting.
5. Buckets unreachable (Redis down): the dispatcher logs once, waits `retry_s` and asks again;
   calls are delayed, never sent past the shared budget and never dropped for it.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field

from gateway.replicas.platform_budget import Buckets, Priority, Spend
from runtime.tasks import TaskOwner

log = logging.getLogger(__name__)

LATE_S = 3.0  # rule 3: a status older than this when its turn comes is stale
MAX_WAITING = 1_000  # rule 4, per lane
RETRY_S = 0.5  # rule 5
MAX_WAIT_S = 5.0  # a lane re-asks at least this often (a more urgent call may have come)


@dataclass(eq=False)
class _Call:
    seq: int
    priority: Priority
    conversation: Hashable
    coalesce: Hashable | None  # rule 3: (conversation, kind) for a droppable status
    queued_at: float
    granted: asyncio.Future[bool] = field(repr=False)

    @property
    def kept(self) -> bool:
        return self.coalesce is None


class _Lane:
    def __init__(self, spends: tuple[Spend, ...]) -> None:
        self.spends = spends
        self.waiting: list[_Call] = []
        self.changed = asyncio.Event()  # a call came or went: the dispatcher looks again
        self.room = asyncio.Event()
        self.room.set()
        self.task: asyncio.Task | None = None


class BudgetQueue:
    def __init__(
        self,
        buckets: Buckets,
        owner: TaskOwner,
        *,
        late_s: float = LATE_S,
        max_waiting: int = MAX_WAITING,
        retry_s: float = RETRY_S,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.buckets = buckets
        self._owner = owner
        self._late_s = late_s
        self._max_waiting = max_waiting
        self._retry_s = retry_s
        self._clock = clock or (lambda: asyncio.get_running_loop().time())
        self._lanes: dict[tuple[Spend, ...], _Lane] = {}
        self._seq = itertools.count()
        self._warned = False

    def waiting(self) -> int:
        return sum(len(lane.waiting) for lane in self._lanes.values())

    async def admit(
        self,
        spends: Sequence[Spend],
        priority: Priority,
        conversation: Hashable,
        coalesce: Hashable | None = None,
    ) -> bool:
        """Wait for this call's turn (True) or learn it was dropped (False; rule 3)."""
        if not spends:
            return True
        key = tuple(spends)
        lane = self._lanes.get(key)
        if lane is None:
            lane = self._lanes[key] = _Lane(key)
        while len(lane.waiting) >= self._max_waiting:  # rule 4
            if coalesce is not None:
                return False
            lane.room.clear()
            await lane.room.wait()
            lane = self._lanes.setdefault(key, lane)
        call = _Call(
            next(self._seq),
            priority,
            conversation,
            coalesce,
            self._clock(),
            asyncio.get_running_loop().create_future(),
        )
        if coalesce is not None:
            for older in [c for c in lane.waiting if c.coalesce == coalesce]:
                self._settle(lane, older, False)  # rule 3: the newer status replaces it
        lane.waiting.append(call)
        lane.changed.set()
        if lane.task is None or lane.task.done():
            lane.task = self._owner.spawn(self._dispatch(key, lane), name="platform budget lane")
        try:
            return await call.granted
        finally:
            if not call.granted.done():  # the caller was cancelled: it no longer waits
                self._settle(lane, call, False)

    def _settle(self, lane: _Lane, call: _Call, granted: bool) -> None:
        if call in lane.waiting:
            lane.waiting.remove(call)
        if not call.granted.done():
            call.granted.set_result(granted)
        lane.changed.set()
        lane.room.set()

    def _next(self, lane: _Lane) -> tuple[_Call, Priority] | None:
        """Rules 1–3: the call to spend a token on next, and the priority it spends at."""
        now = self._clock()
        for call in [c for c in lane.waiting if not c.kept and now - c.queued_at > self._late_s]:
            self._settle(lane, call, False)
        if not lane.waiting:
            return None
        urgent = min(lane.waiting, key=lambda c: (c.priority, c.seq))
        if not urgent.kept:
            return urgent, urgent.priority
        first = min(
            (c for c in lane.waiting if c.kept and c.conversation == urgent.conversation),
            key=lambda c: c.seq,
        )
        return first, urgent.priority  # rule 2: earlier content first, at the answer's priority

    async def _dispatch(self, key: tuple[Spend, ...], lane: _Lane) -> None:
        try:
            while True:
                lane.changed.clear()
                chosen = self._next(lane)
                if chosen is None:
                    return
                call, priority = chosen
                try:
                    wait = await self.buckets.take(lane.spends, priority)
                except Exception as exc:  # rule 5: Redis unreachable, a script error
                    if not self._warned:
                        log.warning("platform budget unavailable (%s); waiting", exc)
                        self._warned = True
                    wait = self._retry_s
                else:
                    self._warned = False
                if wait <= 0:
                    self._settle(lane, call, True)
                    continue
                # Sleep until a token is due, or until a call comes (it may be more urgent).
                try:
                    async with asyncio.timeout(min(wait, MAX_WAIT_S)):
                        await lane.changed.wait()
                except TimeoutError:
                    pass
        finally:
            if self._lanes.get(key) is lane and not lane.waiting:
                del self._lanes[key]  # rule 4: no empty lanes kept
            elif lane.waiting:
                # Cancelled (the owner closes): nobody will grant these; let them go rather
                # than hang their callers (the gateway is shutting down).
                for call in list(lane.waiting):
                    self._settle(lane, call, True)
