"""A slow edge never holds up the session or the other edges (edge_socket rules 1–3).

The wire is faked here (`Wire` is the WebSocket boundary): one edge's `send` never finishes,
as if its TCP window were closed; the other's delivers at once.
"""

from __future__ import annotations

import asyncio

import orjson

from master.edge.relay.edge_socket import TOO_SLOW, EdgeSocket
from master.edge.relay.relay import InProcessRelay, Resumed


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


async def _sent(wire, count: int) -> list[str]:
    """The wire's frames once there are `count` of them (within two seconds)."""
    for _ in range(200):
        if len(wire.sent) >= count:
            return wire.sent
        await asyncio.sleep(0.01)
    raise AssertionError(f"{len(wire.sent)} frames sent, wanted {count}: {wire.sent}")


async def test_a_fresh_socket_is_greeted_and_a_reconnecting_one_only_gets_what_it_missed():
    """Relay rule 4 (issue 14 §7): a cursor the relay keeps means the edge has a greeting."""
    relay = InProcessRelay()
    relay.remember_greeting("s1", "session.capabilities", "caps")
    for n in range(4):
        relay.publish("s1", f"m{n}", f"t{n}")
    fresh_wire, wire = Wire(stuck=False), Wire(stuck=False)
    fresh, edge = _edge(fresh_wire, backlog=10_000), _edge(wire, backlog=10_000)
    await relay.attach(fresh)
    await relay.attach(edge, last_message_id="m1")
    relay.publish("s1", "m4", "t4")  # live from now on
    await relay.publish_node("n1", "node notice")  # the node of both sockets
    servings = [asyncio.create_task(e.serve(lambda data: _append([], data))) for e in (fresh, edge)]
    assert await _sent(fresh_wire, 3) == ["caps", "t4", "node notice"]
    sent = await _sent(wire, 5)
    history = orjson.loads(sent[0])
    assert history["type"] == "session.history"
    assert history["payload"]["since_message_id"] == "m1" and history["payload"]["replayed"] == 2
    assert sent[1:] == ["t2", "t3", "t4", "node notice"]
    for serving in servings:
        serving.cancel()


async def test_a_reconnect_replays_node_frames_published_since_its_cursor_in_order():
    relay = InProcessRelay()
    relay.publish("s1", "m0", "t0")
    await relay.publish_node("n1", "before")
    relay.publish("s1", "m1", "t1")
    await relay.publish_node("n1", "after")
    await relay.publish_node("B", "another node")
    relay.publish("s1", "m2", "t2")
    wire = Wire(stuck=False)
    edge = _edge(wire, backlog=10_000)
    await relay.attach(edge, last_message_id="m1")
    serving = asyncio.create_task(edge.serve(lambda data: _append([], data)))
    assert (await _sent(wire, 3))[1:] == ["after", "t2"]
    serving.cancel()


class ClientReplay:
    """The session layer's side of rule 4: answers as the client's buffer would, and
    publishes live frames while it is being asked (they must be held, then de-duplicated)."""

    def __init__(self, relay, answer, live_meanwhile) -> None:
        self.relay, self.answer, self.live = relay, answer, live_meanwhile
        self.asked: list[tuple[str, str, str]] = []

    async def frames_after(self, node_id, session_id, after):
        self.asked.append((node_id, session_id, after))
        for message_id, text in self.live:
            self.relay.publish(session_id, message_id, text)
            await asyncio.sleep(0)
        return self.answer


def _frame_text(message_id: str) -> str:
    return orjson.dumps({"type": "agent.text.delta", "message_id": message_id}).decode()


async def test_a_cursor_the_relay_lost_is_replayed_from_the_client_without_gap_or_repeat():
    """A restarted master keeps nothing: the client's buffer answers (issue 14 §1)."""
    relay = InProcessRelay()
    relay.remember_greeting("s1", "session.capabilities", "caps")
    owed = [_frame_text(f"c{n}") for n in range(3)]
    live = [("c2", owed[2]), ("c3", _frame_text("c3"))]  # c2 both replayed and live
    hooks = ClientReplay(relay, Resumed(found=True, frames=owed, dropped=2), live)
    await relay.start(hooks)
    wire = Wire(stuck=False)
    edge = _edge(wire, backlog=10_000)
    await relay.attach(edge, last_message_id="gone-from-the-master")
    relay.publish("s1", "c4", _frame_text("c4"))
    serving = asyncio.create_task(edge.serve(lambda data: _append([], data)))
    sent = await _sent(wire, 6)
    await asyncio.sleep(0.05)
    assert hooks.asked == [("n1", "s1", "gone-from-the-master")]
    history = orjson.loads(sent[0])["payload"]
    assert (history["since_message_id"], history["replayed"], history["dropped"]) == (
        "gone-from-the-master",
        3,
        2,
    )
    ids = [orjson.loads(text)["message_id"] for text in sent[1:]]
    assert ids == ["c0", "c1", "c2", "c3", "c4"]  # no greeting: the client knew the cursor
    serving.cancel()


async def test_the_client_links_late_replay_repeats_nothing_the_edges_replay_had():
    """The race of issue 14 §1 seen in test_master_freeze: the restarted master's edge asks the
    client first (the turn's end included), and only then does the client link reattach and
    replay what it had not sent — after its own `session.history`. Those frames must not
    reach the socket a second time; the first frame past them is new and goes through."""
    relay = InProcessRelay()
    owed = [_frame_text(f"c{n}") for n in range(3)]
    await relay.start(ClientReplay(relay, Resumed(found=True, frames=owed, dropped=0), []))
    wire = Wire(stuck=False)
    edge = _edge(wire, backlog=10_000)
    await relay.attach(edge, last_message_id="gone-from-the-master")
    history = orjson.dumps({"type": "session.history", "message_id": "h1"}).decode()
    relay.publish("s1", "h1", history, "session.history")  # the reattached link's greeting
    relay.publish("s1", "c1", owed[1], "agent.text.delta")  # its replay: both already sent
    relay.publish("s1", "c2", owed[2], "agent.text.delta")
    relay.publish("s1", "c3", _frame_text("c3"), "agent.text.delta")  # new
    relay.publish("s1", "c1", owed[1], "agent.text.delta")  # past the replay: not filtered
    serving = asyncio.create_task(edge.serve(lambda data: _append([], data)))
    sent = await _sent(wire, 7)
    ids = [orjson.loads(text)["message_id"] for text in sent[1:]]
    assert ids == ["c0", "c1", "c2", "h1", "c3", "c1"]
    serving.cancel()


async def test_a_cursor_nobody_knows_gets_the_greeting_and_everything_held():
    relay = InProcessRelay()
    relay.remember_greeting("s1", "session.capabilities", "caps")
    await relay.start(ClientReplay(relay, Resumed(found=False, frames=["x"], dropped=0), []))
    wire = Wire(stuck=False)
    edge = _edge(wire, backlog=10_000)
    await relay.attach(edge, last_message_id="unknown")
    serving = asyncio.create_task(edge.serve(lambda data: _append([], data)))
    sent = await _sent(wire, 3)
    assert sent[0] == "caps" and orjson.loads(sent[1])["type"] == "session.history"
    assert sent[2] == "x"
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
