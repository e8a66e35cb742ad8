"""`RedisRelay` against the machine's real Redis, two relays in one process standing for two
replicas (master/edge/replicas/redis_relay.py rules 1–5). The edge sockets are real
`EdgeSocket`s over the recording wire of tests/edge/test_backpressure.py; the session layer's
side of the hooks is a recorder, as the relay only reports to it."""

from __future__ import annotations

import asyncio
import contextlib

import orjson
import pytest

from master.edge.relay.edge_socket import EdgeSocket
from master.edge.replicas.redis_relay import RedisRelay
from tests.edge.test_backpressure import Wire
from tests.scale.conftest import REDIS_URL


class Hooks:
    """Records what the relay reports; takes a session over when told it may."""

    def __init__(self, relay_of) -> None:
        self.relay_of = relay_of
        self.ended: list[str] = []
        self.lost: list[str] = []
        self.taken: list[str] = []

    async def session_ended(self, session_id: str) -> None:
        self.ended.append(session_id)

    async def ownership_lost(self, session_id: str) -> None:
        self.lost.append(session_id)

    async def take_over(self, session_id: str) -> bool:
        if await self.relay_of().claim(session_id):
            self.taken.append(session_id)
            return True
        return False


@pytest.fixture
async def pair(redis_prefix):
    """Two started relays on one prefix (two replicas), with their hooks."""
    _, prefix = redis_prefix
    made = []
    for _ in range(2):
        relay = RedisRelay(REDIS_URL, prefix=prefix, replay_frames=50, lease_seconds=1.0)
        hooks = Hooks(lambda relay=relay: relay)
        await relay.start(hooks)
        made.append((relay, hooks))
    yield made
    for relay, _ in made:
        with contextlib.suppress(Exception):
            await relay.close()


def edge_on(session_id: str) -> tuple[EdgeSocket, Wire]:
    wire = Wire(stuck=False)
    edge = EdgeSocket(wire, user_id="u", session_id=session_id, node_id="n", max_backlog=10**6)
    return edge, wire


async def serve(edge: EdgeSocket) -> asyncio.Task:
    async def ignore(_data) -> None:
        return None

    return asyncio.create_task(edge.serve(ignore))


async def until(condition, what: str, limit: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + limit
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


async def test_frames_reach_edges_on_both_replicas_in_order_and_once(pair):
    (a, _), (b, _) = pair
    assert await a.claim("s1") and not await b.claim("s1")  # one holder (rule 1)
    edges = [edge_on("s1"), edge_on("s1")]
    await a.attach(edges[0][0])
    await b.attach(edges[1][0])
    tasks = [await serve(edge) for edge, _ in edges]
    # Frame texts as they come: JSON with quotes, escapes, slashes, non-ASCII, a line break.
    texts = [f'{{"text": "é ✓ \\"{n}\\" \\\\ / 🙂"}}\n' for n in range(30)]
    for n, text in enumerate(texts):
        a.publish("s1", f"m{n}", text, "agent.text.delta")
    a.publish("s1", "m5", "t5 again", "agent.text.delta")  # a repeat by message_id: dropped
    for _, wire in edges:
        await until(lambda wire=wire: len(wire.sent) >= 30, "30 frames")
    await asyncio.sleep(0.1)
    for _, wire in edges:
        assert wire.sent == texts
    assert await b.cursor("s1") == "m29"
    for task in tasks:
        task.cancel()


async def test_a_late_socket_gets_replay_then_live_without_a_gap_and_no_second_greeting(pair):
    (a, _), (b, _) = pair
    await a.claim("s2")
    a.remember_greeting("s2", "session.capabilities", "caps")
    for n in range(10):
        a.publish("s2", f"m{n}", f"t{n}", "agent.text.delta")
    await until(lambda: a.writer.idle, "writes flushed")

    edge, wire = edge_on("s2")
    attaching = asyncio.create_task(b.attach(edge, last_message_id="m6"))
    for n in range(10, 40):  # published while the socket attaches
        a.publish("s2", f"m{n}", f"t{n}", "agent.text.delta")
        await asyncio.sleep(0)
    await attaching
    task = await serve(edge)
    await until(lambda: len(wire.sent) >= 1 + 33, "history and 33 frames")
    await asyncio.sleep(0.1)
    history = orjson.loads(wire.sent[0])  # no greeting: a kept cursor means it has one
    assert history["type"] == "session.history"
    assert history["payload"]["since_message_id"] == "m6"
    assert wire.sent[1:] == [f"t{n}" for n in range(7, 40)]  # m7…m39, each once, in order
    task.cancel()


async def test_a_replica_that_lost_its_lease_cannot_write(pair):
    (a, hooks_a), (b, _) = pair
    await a.claim("s3")
    await a.redis.delete(f"{a.keys.prefix}own:{{s3}}")  # the lease expired while A stalled…
    assert await b.claim("s3")  # …and B took the session over
    a.publish("s3", "stale", "from the old holder", "agent.text.delta")
    await until(lambda: hooks_a.lost == ["s3"], "A told it lost the session")
    assert await a.redis.xlen(f"{a.keys.prefix}s:{{s3}}:frames") == 0  # fenced: nothing written
    b.publish("s3", "fresh", "from the new holder", "agent.text.delta")
    await until(lambda: b.writer.idle, "B's write")
    assert await b.cursor("s3") == "fresh"


async def test_an_expired_lease_is_free_and_renewal_keeps_a_live_one(pair):
    (a, _), (b, _) = pair
    await a.claim("kept")
    await asyncio.sleep(1.6)  # past the 1 s lease: renewed every third of it
    assert await b.unowned(["kept", "nobody"]) == ["nobody"]
    await a.release("kept")
    assert await b.unowned(["kept"]) == ["kept"]


async def test_edge_frames_reach_the_holders_client_and_control_ids_are_shared(pair):
    (a, _), (b, hooks_b) = pair

    class Link:
        def __init__(self) -> None:
            self.got: list[str] = []

        async def send(self, text: str) -> bool:
            self.got.append(text)
            return True

    link = Link()
    await a.claim("s4")
    a.bind_client("s4", link)
    await until(lambda: f"{a.keys.prefix}c:s4" in a.subscriptions.channels, "A listens for s4")
    assert await b.to_client("s4", "prompt from an edge on B")
    await until(lambda: link.got == ["prompt from an edge on B"], "the frame at A's link")
    assert hooks_b.taken == []  # A holds it: B did not take it over

    assert await a.claim_control("s4", "ctl-1")
    assert not await b.claim_control("s4", "ctl-1")  # the same id on another replica
    await b.release_control("s4", "ctl-1")
    assert await a.claim_control("s4", "ctl-1")

    # Nobody holds s5: B's edge frame makes B take it over (rule 4); the recorder binds no
    # link, so there is nothing to send it through and the edge is told so.
    assert await b.to_client("s5", "x") is False
    assert hooks_b.taken == ["s5"] and not await a.claim("s5")


async def test_an_end_and_a_node_push_reach_sockets_on_the_other_replica(pair):
    (a, _), (b, hooks_b) = pair
    await a.claim("s6")
    edge, wire = edge_on("s6")
    await b.attach(edge)
    task = await serve(edge)
    assert await a.publish_node("n", "config changed") == 2  # both replicas listen to the bus
    await until(lambda: wire.sent == ["config changed"], "the node push on B")
    a.forget_session("s6", 1000, "session terminated")
    await asyncio.wait_for(task, 5)
    assert wire.closed == (1000, "session terminated")
    await until(lambda: hooks_b.ended == ["s6"], "B told the session ended")
    gone = (f"{a.keys.prefix}s:{{s6}}:frames", f"{a.keys.prefix}own:{{s6}}")
    assert await a.redis.exists(*gone) == 0


async def test_a_replayed_frame_arriving_late_from_the_channel_is_not_sent_again(pair):
    """The reply to the replay's XRANGE can overtake the published message of a frame it
    already holds (two connections): the stream position drops that late copy."""
    (a, _), (b, _) = pair
    await a.claim("s7")
    for n in range(3):
        a.publish("s7", f"m{n}", f"t{n}", "agent.text.delta")
    await until(lambda: a.writer.idle, "writes flushed")
    entries = await b.redis.xrange(f"{b.keys.prefix}s:{{s7}}:frames")
    edge, wire = edge_on("s7")
    await b.attach(edge, last_message_id="m0")  # replays t1, t2
    late = orjson.dumps([entries[2][0], "t2"]).decode()  # t2's own message, arriving now
    b.attachments.deliver("s7", late)
    newer = orjson.dumps([f"{int(entries[2][0].split('-')[0]) + 1}-0", "t3"]).decode()
    b.attachments.deliver("s7", newer)
    task = await serve(edge)
    await until(lambda: len(wire.sent) >= 4, "history, t1, t2, t3")
    await asyncio.sleep(0.05)
    assert orjson.loads(wire.sent[0])["type"] == "session.history"
    assert wire.sent[1:] == ["t1", "t2", "t3"]
    task.cancel()
