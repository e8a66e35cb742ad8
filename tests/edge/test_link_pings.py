"""The master's shared keepalive for client links (master.edge.links.link_pings): real WebSockets on
loopback; a peer that stops reading never answers a Ping, a reading one always does."""

from __future__ import annotations

import asyncio
import contextlib

from websockets.asyncio.client import connect
from websockets.asyncio.server import serve
from websockets.protocol import State

from master.edge.links.link_pings import LinkPings
from rawp.clock import FakeClock


@contextlib.asynccontextmanager
async def live_and_stalled():
    """Two client-side links to a real server: `live` answers every Ping, `dead` none (its
    server end reads nothing)."""
    stalled: list = []

    async def handler(ws):
        if ws.request.path == "/stall":
            ws.transport.pause_reading()  # reads no Ping, so answers none
            stalled.append(ws)
        await ws.wait_closed()

    async with serve(handler, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        live = await connect(f"ws://127.0.0.1:{port}/live", ping_interval=None)
        dead = await connect(f"ws://127.0.0.1:{port}/stall", ping_interval=None)
        try:
            yield live, dead
        finally:
            for ws in stalled:  # it reads nothing, so it would not see the close either
                ws.transport.abort()


async def test_a_link_without_pongs_is_aborted_and_a_live_one_kept():
    async with live_and_stalled() as (live, dead), LinkPings(interval=0.2, ticks=2) as pings:
        pings.add(live)
        pings.add(dead)
        for _ in range(6):  # three rounds: a Ping each, then the check of the next round
            await pings.tick()
            await asyncio.sleep(0.1)
        await asyncio.wait_for(dead.wait_closed(), 5)
        assert pings.aborted == 1
        assert live.state is State.OPEN and len(pings) == 1
        await live.close()
        await pings.tick()
        await pings.tick()
        assert len(pings) == 0  # a closed link is forgotten on its turn


async def test_pings_go_out_a_slice_per_tick():
    pings = LinkPings(interval=1.0, ticks=4)
    received: list[str] = []  # the paths of the links pinged by the first tick

    async def handler(ws):
        await ws.wait_closed()

    async with serve(handler, "127.0.0.1", 0) as server, pings:
        port = server.sockets[0].getsockname()[1]
        links = [await connect(f"ws://127.0.0.1:{port}/{i}", ping_interval=None) for i in range(8)]
        for ws in links:
            pings.add(ws)
        await pings.tick()
        pinged = [ws for ws in links if pings._links[ws] is not None]
        received.extend(str(ws.request.path) for ws in pinged)
        assert received == ["/0", "/1"]  # 8 links over 4 ticks: two per tick, in order
        for _ in range(3):
            await pings.tick()
        assert all(pings._links[ws] is not None for ws in links)
        for ws in links:
            await ws.close()


async def test_a_link_stuck_writing_does_not_hold_up_the_others():
    async def handler(ws):
        await ws.wait_closed()

    async with serve(handler, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        stuck = await connect(f"ws://127.0.0.1:{port}/stuck", ping_interval=None)
        live = await connect(f"ws://127.0.0.1:{port}/live", ping_interval=None)
        # What the transport says when its buffer is full (a client not reading): every write,
        # a Ping too, then waits for room.
        stuck.pause_writing()
        async with LinkPings(interval=1.0, ticks=1) as pings:
            pings.add(stuck)
            pings.add(live)
            await asyncio.wait_for(pings.tick(), 2)  # returns, though stuck's Ping is not out
            await asyncio.sleep(0.1)
            assert isinstance(pings._links[stuck], asyncio.Task)  # still being written
            assert not isinstance(pings._links[live], asyncio.Task)  # written, Pong awaited
            await pings.tick()
            assert pings.aborted == 0 and stuck in pings._links  # passed over, as websockets
            stuck.resume_writing()
            await asyncio.sleep(0.1)
            assert not isinstance(pings._links[stuck], asyncio.Task)  # written once there was room
            await stuck.close()
            await live.close()


async def test_a_stopped_pinger_cancels_the_pings_it_is_still_writing():
    async def handler(ws):
        await ws.wait_closed()

    async with serve(handler, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        stuck = await connect(f"ws://127.0.0.1:{port}/stuck", ping_interval=None)
        stuck.pause_writing()  # its Ping waits for room that never comes
        pings = LinkPings(interval=0.05, ticks=1)
        pings.add(stuck)
        running = asyncio.ensure_future(pings.run())
        await asyncio.sleep(0.2)
        writing = pings._links[stuck]
        assert isinstance(writing, asyncio.Task) and not writing.done()
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
        await asyncio.sleep(0)
        assert writing.cancelled()  # rule 5: nothing the pinger started outlives it
        stuck.resume_writing()
        await stuck.close()


async def test_with_fewer_links_than_ticks_each_is_pinged_and_judged_once_an_interval():
    """Issue 32: with fewer links than ticks a link comes round on every tick. It is pinged
    once an interval, and aborted only when its Pong is an interval late — not on the next
    tick, 0.1 s after its Ping, which on a busy machine cut the link of a session just
    started."""
    clock = FakeClock()
    pings = LinkPings(interval=1.0, ticks=10, monotonic=clock.monotonic)
    async with live_and_stalled() as (live, dead), pings:
        pings.add(live)
        pings.add(dead)
        for _ in range(10):  # one interval, a tick each 0.1 s: each link comes round 5 times
            await pings.tick()
            await asyncio.sleep(0.01)  # the Pings go out; the live link's Pong comes back
            clock.advance(0.1)
        assert pings.sent == 2 and pings.aborted == 0  # one Ping each, nobody judged yet
        for _ in range(2):  # an interval after each one's Ping: live again, the dead one out
            await pings.tick()
            await asyncio.sleep(0.01)
            clock.advance(0.1)
        await asyncio.wait_for(dead.wait_closed(), 5)
        assert pings.sent == 3 and pings.aborted == 1
        assert live.state is State.OPEN
        await live.close()
