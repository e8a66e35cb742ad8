"""A slow edge never holds up the session or the other edges (edge_socket rules 1–3).

The wire is faked here (`Wire` is the WebSocket boundary): one edge's `send` never finishes,
as if its TCP window were closed; the other's delivers at once.
"""

from __future__ import annotations

import asyncio

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
    relay.attach(slow)
    relay.attach(fast)
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
        relay.attach(edge)
    assert relay.publish_node("A", "notice") == 2
    relay.forget_session("s1", 1000, "session terminated")
    assert not edges[0].open and edges[0].close_reason == "session terminated"
    relay.detach(edges[0])
    assert relay.publish_node("A", "notice") == 1


async def test_the_replay_ring_is_bounded_and_finds_cursors():
    relay = InProcessRelay(replay_frames=3)
    for n in range(5):
        relay.publish("s", f"m{n}", f"t{n}")
    assert relay.replay("s", "m2") == (["t3", "t4"], True)
    assert relay.replay("s", "m0") == (["t2", "t3", "t4"], False)  # m0 fell out of the ring
    relay.remember_greeting("s", "tool.catalog.publish", "cat")
    relay.remember_greeting("s", "session.capabilities", "caps")
    assert relay.greeting("s") == ["caps", "cat"]


def test_control_ids_are_remembered_within_a_bounded_window():
    from master.edge.live import LiveSession
    from rawp.config import DEFAULT_LIMITS

    live = LiveSession("s", "n", "u", "demo", DEFAULT_LIMITS, dedupe_window=3)
    assert [live.claim_control(i) for i in ("a", "b", "a", "c", "d")] == [
        True, True, False, True, True,
    ]  # fmt: skip
    assert len(live._controls) == 3  # "a" was the oldest and is forgotten
    assert live.claim_control("a") and not live.claim_control("d")
    live.release_control("d")  # undelivered: may come again
    assert live.claim_control("d")
