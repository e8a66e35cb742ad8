"""The replay the relay keeps is bounded by bytes, per session and for the whole master
(issue 35 §2, master.edge.relay.replay_ring), and a reconnect past what was kept is told of the
gap (dps-profile §8: `dropped > 0`), never given a silent hole."""

from __future__ import annotations

import asyncio
import gc

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from master.edge.relay.relay import InProcessRelay
from master.edge.relay.replay_ring import FRAME_COST, ReplayBudget, Ring
from tests.edge.test_backpressure import Wire, _append, _edge, _sent


def _cost(text: str) -> int:
    return len(text) + FRAME_COST


def test_a_session_keeps_its_latest_frames_within_its_bytes():
    text = "x" * 700
    budget = ReplayBudget(frames=2048, session_bytes=10 * _cost(text), total_bytes=10**9)
    ring = Ring()
    for n in range(50):
        budget.keep(ring, f"m{n}", text, n)
    assert [m for m, _, _ in ring] == [f"m{n}" for n in range(40, 50)]
    assert ring.bytes == budget.bytes == 10 * _cost(text)
    assert ring.evicted == 40


def test_past_the_masters_budget_the_oldest_frames_go_whichever_session_they_are_in():
    text = "y" * 200
    budget = ReplayBudget(frames=2048, session_bytes=10**9, total_bytes=30 * _cost(text))
    quiet, live = Ring(), Ring()
    for n in range(20):
        budget.keep(quiet, f"q{n}", text, n)  # a session that then goes quiet
    for n in range(20, 45):
        budget.keep(live, f"l{n}", text, n)
    assert budget.bytes == 30 * _cost(text)
    assert [m for m, _, _ in quiet] == [f"q{n}" for n in range(15, 20)]  # lost its oldest 15
    assert len(live) == 25 and live.evicted == 0
    budget.forget(quiet)  # the session ended: its bytes stop counting
    assert budget.bytes == 25 * _cost(text)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 4), st.integers(0, 3000), st.booleans()), max_size=300),
    st.integers(1, 40),
    st.integers(2_000, 40_000),
    st.integers(4_000, 120_000),
)
def test_every_ring_keeps_a_suffix_of_what_it_was_given_within_both_budgets(
    steps, frames, session_bytes, total_bytes
):
    budget = ReplayBudget(frames=frames, session_bytes=session_bytes, total_bytes=total_bytes)
    rings = [Ring() for _ in range(5)]
    given_to: list[list[str]] = [[] for _ in rings]
    for order, (which, size, end) in enumerate(steps):
        if end and given_to[which]:
            budget.forget(rings[which])
            rings[which], given_to[which] = Ring(), []
            continue
        message_id = f"m{order}"
        budget.keep(rings[which], message_id, "z" * size, order)
        given_to[which].append(message_id)
        kept_bytes = 0
        for ring, published in zip(rings, given_to, strict=True):
            ids = [m for m, _, _ in ring]
            assert ids == published[len(published) - len(ids) :]  # a suffix: no hole
            assert ring.evicted + len(ids) == len(published)
            assert len(ring) <= frames
            assert ring.bytes == sum(_cost(t) for _, t, _ in ring) <= max(session_bytes, 0)
            kept_bytes += ring.bytes
        assert budget.bytes == kept_bytes <= total_bytes


def test_kept_frames_leave_nothing_for_the_collector_to_walk():
    """Rule 5: keeping a frame creates no object the collector tracks, not even until its
    first collection — a young collection at 10,000 sessions walked ~90,000 such tuples."""
    budget = ReplayBudget(frames=100, session_bytes=10**6, total_bytes=10**6)
    rings = [Ring() for _ in range(3)]
    texts = [f"frame {order} " + "z" * 40 for order in range(1000)]  # made before counting
    ids = [f"m{order}" for order in range(1000)]
    gc.collect()
    gc.disable()  # nothing collected (nor untracked) while counting
    try:
        before = len(gc.get_objects())
        for order in range(1000):
            budget.keep(rings[order % 3], ids[order], texts[order], order)
        made = len(gc.get_objects()) - before
    finally:
        gc.enable()
    assert made < 10, f"{made} tracked objects for 1,000 kept frames"
    assert sum(len(ring) for ring in rings) == 300  # the per-session bound still holds
    assert [entry[1] for entry in rings[0]] == texts[::3][-100:]  # its newest, in order


def _frame(message_id: str) -> str:
    return orjson.dumps({"type": "agent.text.delta", "message_id": message_id}).decode()


async def test_a_reconnect_past_what_was_kept_is_told_of_the_gap_when_the_client_cannot_say():
    text_size = len(_frame("m00"))
    relay = InProcessRelay(replay_bytes=5 * (text_size + FRAME_COST))
    for n in range(12):
        relay.publish("s1", f"m{n:02}", _frame(f"m{n:02}"))
    wire = Wire(stuck=False)
    edge = _edge(wire, backlog=10_000)
    await relay.attach(edge, last_message_id="m02")  # evicted; no client to ask
    serving = asyncio.create_task(edge.serve(lambda data: _append([], data)))
    try:
        sent = await _sent(wire, 6)
    finally:
        serving.cancel()
    history = orjson.loads(sent[0])
    assert history["type"] == "session.history"
    assert history["payload"]["dropped"] == 7 and history["payload"]["replayed"] == 5
    assert [orjson.loads(t)["message_id"] for t in sent[1:]] == [f"m{n:02}" for n in range(7, 12)]
