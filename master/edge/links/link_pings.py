"""Keepalive pings for every client link of the master from one task (issue 20 §3).

websockets runs a keepalive task per connection (`ping_interval`): at 10,000 sessions that is
10,000 tasks asleep, ~1.5 KB each, to send one Ping every 20 s. Here one task does it for all.

Rules:

1. Each link registered with `add` gets a Ping every `interval` seconds. The links are visited a
   slice per tick (`ticks` ticks per interval), so 10,000 Pings never go out in one turn of
   the event loop, where they would hold up the frames being relayed. A visit pings a link
   only when `interval` has passed since its last Ping: with fewer links than ticks the same
   link comes round every tick, and it must not be pinged — or judged — every 0.1 s.
2. A link whose Pong has not come back `interval` seconds after its Ping (websockets' own
   default waits as long) is aborted, as websockets' keepalive fails it: the link's pump
   sees the socket close and reattaches (master.edge.links.client_link rule 2). Before
   issue 32 a link was judged on its next visit, which for a master with one session was the
   next tick: on a busy machine a Pong 0.1 s late cut the link of a session just started.
3. A link that closed is forgotten on its turn; `discard` forgets one at once.
4. A Ping waits for room in the link's send buffer (websockets drains after each write), so
   each goes out in a task of its own and the loop never waits on one stalled link; a link
   whose Ping is still being written on its next turn is passed over, as websockets' own
   keepalive, blocked in the same write, would be.
5. Those tasks are children of the pinger's own `TaskOwner` (runtime.tasks, issue 28 §6): it runs
   while `run` does (or inside `async with pings:`), and when the pinger stops — `run`
   cancelled at shutdown — the Pings still being written are cancelled and awaited with it:
   nothing it started outlives it, and a failure is logged under its name.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from itertools import islice

from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed
from websockets.protocol import State

from runtime.tasks import TaskOwner

log = logging.getLogger("rawp.master.edge.link_pings")

INTERVAL = 20.0  # seconds, as websockets' default ping_interval and ping_timeout
# Rule 1: a slice every 0.1 s. At 10,000 links a slice of 500 (20 ticks) held the relay for
# ~70 ms each second (py-spy: 6.8 % of the master's CPU is pinging, mostly starting the Pings'
# tasks); 50 at a time spread the same work thin.
TICKS = 200


class LinkPings:
    def __init__(
        self,
        interval: float = INTERVAL,
        ticks: int = TICKS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.interval = interval
        self.ticks = ticks
        self._monotonic = monotonic
        # link → its Ping being written (a task), then the Pong it waits for (a future); None
        # before its first Ping. A dict keeps the order.
        self._links: dict[ClientConnection, asyncio.Future | None] = {}
        self._pinged_at: dict[ClientConnection, float] = {}  # when its last Ping was started
        self._cursor = 0  # where the next slice starts
        self.aborted = 0
        self.sent = 0  # Pings started
        self._tasks = TaskOwner("link pings", log)  # rule 5

    def add(self, ws: ClientConnection) -> None:
        self._links[ws] = None

    def discard(self, ws: ClientConnection) -> None:
        self._links.pop(ws, None)
        self._pinged_at.pop(ws, None)

    def __len__(self) -> int:
        return len(self._links)

    async def run(self) -> None:
        async with self:
            while True:
                await asyncio.sleep(self.interval / self.ticks)
                await self.tick()

    async def __aenter__(self) -> LinkPings:
        await self._tasks.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._tasks.close()  # rule 5: the Pings still being written are cancelled

    async def tick(self) -> None:
        """Rule 1: the next slice of the links, each checked (rule 2) and pinged."""
        if not self._links:
            return
        size = -(-len(self._links) // self.ticks)  # ceil: every link once per interval
        if self._cursor >= len(self._links):
            self._cursor = 0
        links = list(islice(self._links.items(), self._cursor, self._cursor + size))
        self._cursor += size
        now = self._monotonic()
        for ws, pending in links:
            if ws.state is State.CLOSED:
                self._forget(ws)  # rule 3
            elif isinstance(pending, asyncio.Task) and not pending.done():
                continue  # rule 4: its Ping is still being written
            elif now - self._pinged_at.get(ws, -self.interval) < self.interval:
                continue  # rule 1: pinged less than an interval ago
            elif pending is not None and not pending.done():
                log.info("a client link answered no Ping within %.0f s; aborting it", self.interval)
                self.aborted += 1
                self._forget(ws)
                ws.transport.abort()  # rule 2: the pump sees the close and reattaches
            else:
                self._pinged_at[ws] = now
                self.sent += 1
                writing = self._links[ws] = self._tasks.spawn(_ping(ws), name="ping")
                writing.add_done_callback(lambda task, ws=ws: self._pinged(ws, task))

    def _pinged(self, ws: ClientConnection, writing: asyncio.Task) -> None:
        """The Ping is written: wait for its Pong; a link that closed meanwhile waits for its
        turn to be forgotten (rule 3)."""
        pong = None if writing.cancelled() else writing.result()  # None: it failed
        if self._links.get(ws) is not writing:
            return  # forgotten, or pinged again since
        if pong is None:
            self._links[ws] = None
            return
        pong.add_done_callback(_retrieved)
        self._links[ws] = pong

    def _forget(self, ws: ClientConnection) -> None:
        self._links.pop(ws, None)
        self._pinged_at.pop(ws, None)
        self._cursor = max(0, self._cursor - 1)  # the slice after it moved up by one


async def _ping(ws: ClientConnection) -> asyncio.Future[float] | None:
    """Write one Ping; its Pong's future, or None when the link closed meanwhile (not a fault:
    the link's pump sees the close and reattaches)."""
    try:
        return await ws.ping()
    except ConnectionClosed:
        return None


def _retrieved(pong: asyncio.Future[float]) -> None:
    # A link that closes fails its Pong with ConnectionClosed: nobody awaits it, so read it
    # here, or asyncio logs "exception was never retrieved" for every closed link.
    if not pong.cancelled():
        pong.exception()
