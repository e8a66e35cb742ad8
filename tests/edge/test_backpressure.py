"""A slow edge never holds up the session or the other edges (edge_socket rules 1–3).

The wire is faked here (`Wire` is the WebSocket boundary): one edge's `send` never finishes,
as if its TCP window were closed; the other's delivers at once.
"""

from __future__ import annotations

import asyncio

import orjson

from master.edge.edge_socket import TOO_SLOW, EdgeSocket
from master.edge.relay import InProcessRelay


class Wire:
    def __init__(self, *, stuck: bool) -> None:
        self.stuck = stuck
        self.sent: list[str] = []
        self.closed: tuple[int, str] | None = None
        self.inbound: asyncio.Queue = asyncio.Queue()
        self._never = asyncio.Event()

    async def send(self, data: str) -> None:
        if self.stuck:
            await self._never.wait()
        self.sent.append(data)

    async def receive(self) -> str:
        return await self.inbound.get()

    async def close(self, code: int, reason: str = "") -> None:
        self.closed = (code, reason)


def _edge(wire: Wire, node: str = "n1", session: str = "s1", backlog: int = 80) -> EdgeSocket:
    return EdgeSocket(wire, user_id="u", session_id=session, node_id=node, max_backlog=backlog)


async def test_a_stuck_edge_is_cut_off_and_the_other_gets_everything():
    relay = InProcessRelay()
    slow_wire, fast_wire = Wire(stuck=True), Wire(stuck=False)
    slow, fast = _edge(slow_wire), _edge(fast_wire, backlog=10_000)
    await relay.attach(slow)
    await relay.attach(fast)
    received: list = []
    serving = [
        asyncio.create_task(edge.serve(lambda data: _append(received, data)))
        for edge in (slow, fast)
    ]
    frames = [f'{{"n": {n}}}' for n in range(100)]
    for n, text in enumerate(frames):
        relay.publish("s1", f"id-{n}", text)  # never awaits: nothing here can block
    await asyncio.wait_for(serving[0], 5)  # the slow edge's serve ends: it was kicked
    assert slow_wire.closed is not None and slow_wire.closed[0] == TOO_SLOW
    assert "too slow" in slow_wire.closed[1] and len(slow_wire.closed[1].encode()) <= 123
    assert not slow.offer("more")  # a kicked socket takes nothing
    while len(fast_wire.sent) < len(frames):  # bounded by the test's timeout below
        await asyncio.wait_for(asyncio.sleep(0.01), 1)
    assert fast_wire.sent == frames
    relay.detach(slow)
    assert relay.edges("s1") == [fast]
    serving[1].cancel()


async def _append(bucket: list, data) -> None:
    bucket.append(data)


async def test_node_frames_go_to_every_socket_of_the_node_once():
    relay = InProcessRelay()
    a1, a2, b1 = Wire(stuck=False), Wire(stuck=False), Wire(stuck=False)
    edges = [_edge(a1, "A", "s1"), _edge(a2, "A", "s2"), _edge(b1, "B", "s3")]
    for edge in edges:
        await relay.attach(edge)
    assert await relay.publish_node("A", "notice") == 2
    relay.forget_session("s1", 1000, "session terminated")
    assert not edges[0].open and edges[0].close_reason == "session terminated"
    relay.detach(edges[0])
    assert await relay.publish_node("A", "notice") == 1


async def test_the_replay_ring_is_bounded_and_finds_cursors():
    relay = InProcessRelay(replay_frames=3)
    for n in range(5):
        relay.publish("s", f"m{n}", f"t{n}")
    assert relay.replay("s", "m2") == (["t3", "t4"], True)
    assert relay.replay("s", "m0") == (["t2", "t3", "t4"], False)  # m0 fell out of the ring
    relay.remember_greeting("s", "tool.catalog.publish", "cat")
    relay.remember_greeting("s", "session.capabilities", "caps")
    assert relay.greeting("s") == ["caps", "cat"]


async def test_an_attaching_socket_gets_greeting_history_and_what_it_missed_in_order():
    relay = InProcessRelay()
    relay.remember_greeting("s1", "session.capabilities", "caps")
    for n in range(4):
        relay.publish("s1", f"m{n}", f"t{n}")
    wire = Wire(stuck=False)
    edge = _edge(wire, backlog=10_000)
    await relay.attach(edge, last_message_id="m1")
    relay.publish("s1", "m4", "t4")  # live from now on
    serving = asyncio.create_task(edge.serve(lambda data: _append([], data)))
    while len(wire.sent) < 5:  # bounded by the wait_for below
        await asyncio.wait_for(asyncio.sleep(0.01), 1)
    history = orjson.loads(wire.sent[1])
    assert wire.sent[0] == "caps" and history["type"] == "session.history"
    assert history["payload"]["since_message_id"] == "m1" and history["payload"]["replayed"] == 2
    assert wire.sent[2:] == ["t2", "t3", "t4"]
    serving.cancel()


async def test_control_ids_are_remembered_within_a_bounded_window():
    relay = InProcessRelay(dedupe_window=3)
    claims = [await relay.claim_control("s", i) for i in ("a", "b", "a", "c", "d")]
    assert claims == [True, True, False, True, True]
    assert await relay.claim_control("s", "a")  # "a" was the oldest and was forgotten
    assert not await relay.claim_control("s", "d")
    await relay.release_control("s", "d")  # undelivered: may come again
    assert await relay.claim_control("s", "d")
    assert await relay.claim_control("other", "d")  # per session
