"""Keepalive pings for every client link of the master from one task (issue 20 §3).

websockets runs a keepalive task per connection (`ping_interval`): at 10,000 sessions that is
10,000 tasks asleep, ~1.5 KB each, to send one Ping every 20 s. Here one task does it for all.

Rules:

1. Each link registered with `add` gets a Ping every `interval` seconds. The links are pinged a
   slice per tick (`ticks` ticks per interval), so 10,000 Pings never go out in one turn of
   the event loop, where they would hold up the frames being relayed.
2. A link whose Pong has not come back by its next turn (`interval` seconds later; websockets'
   own default waits as long) is aborted, as websockets' keepalive fails it: the link's pump
   sees the socket close and reattaches (master.edge.client_link rule 2).
3. A link that closed is forgotten on its turn; `discard` forgets one at once.
"""

from __future__ import annotations

import asyncio
import logging
from itertools import islice

from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed
from websockets.protocol import State

log = logging.getLogger("rawp.master.edge.link_pings")

INTERVAL = 20.0  # seconds, as websockets' default ping_interval and ping_timeout


class LinkPings:
    def __init__(self, interval: float = INTERVAL, ticks: int = 20) -> None:
        self.interval = interval
        self.ticks = ticks
        # link → the Pong it waits for (None before its first Ping); a dict keeps the order.
        self._links: dict[ClientConnection, asyncio.Future[float] | None] = {}
        self._cursor = 0  # where the next slice starts
        self.aborted = 0

    def add(self, ws: ClientConnection) -> None:
        self._links[ws] = None

    def discard(self, ws: ClientConnection) -> None:
        self._links.pop(ws, None)

    def __len__(self) -> int:
        return len(self._links)

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.interval / self.ticks)
            await self.tick()

    async def tick(self) -> None:
        """Rule 1: the next slice of the links, each checked (rule 2) and pinged."""
        if not self._links:
            return
        size = -(-len(self._links) // self.ticks)  # ceil: every link once per interval
        if self._cursor >= len(self._links):
            self._cursor = 0
        links = list(islice(self._links.items(), self._cursor, self._cursor + size))
        self._cursor += size
        for ws, pong in links:
            if ws.state is State.CLOSED:
                self._forget(ws)  # rule 3
            elif pong is not None and not pong.done():
                log.info("a client link answered no Ping within %.0f s; aborting it", self.interval)
                self.aborted += 1
                self._forget(ws)
                ws.transport.abort()  # rule 2: the pump sees the close and reattaches
            else:
                try:
                    pong = self._links[ws] = await ws.ping()
                except ConnectionClosed:
                    self._forget(ws)
                else:
                    pong.add_done_callback(_retrieved)

    def _forget(self, ws: ClientConnection) -> None:
        self._links.pop(ws, None)
        self._cursor = max(0, self._cursor - 1)  # the slice after it moved up by one


def _retrieved(pong: asyncio.Future[float]) -> None:
    # A link that closes fails its Pong with ConnectionClosed: nobody awaits it, so read it
    # here, or asyncio logs "exception was never retrieved" for every closed link.
    if not pong.cancelled():
        pong.exception()
