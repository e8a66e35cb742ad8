"""Scenarios 4 and 5 (issue 14 §8): a link cut at a random byte of a turn, mid-frame as often as
not — the master's link to the client (the proxy the client is paired through), then the edge's
link to the master (a proxy the edge's sockets go through). Nothing dies; the master reattaches
to the client, the edge reconnects with its cursor: 0 lost, 0 repeated on one socket, order
kept."""

from __future__ import annotations

import pytest

from tests.faults import trials
from tests.faults.stacks import one_master, session_edge
from tests.faults.tiers import RandomCutProxy
from tests.faults.turns import turn_trial

OWNER = "slack:T14:U8"


@pytest.fixture
def master_stack(tmp_path):
    with one_master(tmp_path, OWNER) as made:
        yield made


async def cut_trials(scenario: str, edge, proxy: RandomCutProxy, url: str) -> None:
    """A warm-up turn measures how many bytes a turn sends through `proxy`; each trial then
    arms a cut at a random one of them."""
    before = proxy.downstream
    warm = await turn_trial(edge, 0, lambda: [url], None, None, point="warm-up, no cut")
    assert warm.ok, warm.line()
    per_turn = proxy.downstream - before
    assert per_turn > 1000, f"{scenario}: only {per_turn} bytes of a turn went through the proxy"

    async def trial(number, rng):
        # Before 90% of a turn's bytes: the cut always lands inside the turn.
        at = rng.randrange(1, per_turn * 9 // 10)
        proxy.arm(at)
        outcome = await turn_trial(
            edge, number, lambda: [url], None, None, point=f"cut at byte {at} of {per_turn}"
        )
        proxy.disarm()
        if not proxy.fired.is_set():
            outcome.notes.append("the cut did not happen during the turn")
        return outcome

    await trials.run(scenario, trial)


async def test_client_link_cut_at_random_points_loses_and_repeats_nothing(master_stack):
    made = master_stack
    url = made.stack.master_url
    async with session_edge(url, OWNER, made.stack.root) as edge:
        await cut_trials("client-link cut", edge, made.stack.proxy, url)


async def test_client_link_cut_in_a_new_sessions_first_turn_loses_nothing(master_stack):
    """Issue 32: a link cut before the master has read any frame after the greeting (a new
    session's first turn; on a busy machine the link pings cut it there). The client had
    written the turn's first frames into the dead socket, so they count as sent; the master
    reattaches with no frame of its own to name, and the client must replay from its greeting,
    sent frames included — before, it replayed only unsent ones and `session.turn.start` was
    lost. Each trial is a new session, cut at the first byte after the prompt."""
    made = master_stack
    url = made.stack.master_url
    proxy = made.stack.proxy

    async def trial(number, rng):
        async with session_edge(url, OWNER, made.stack.root) as edge:
            await edge.connect(lambda: [url], 15.0)  # the greeting has come through the proxy
            proxy.arm(1)  # the first byte of the turn: the master gets nothing after it
            outcome = await turn_trial(
                edge, number, lambda: [url], None, None, point="cut at the turn's first byte"
            )
            proxy.disarm()
            if not proxy.fired.is_set():
                outcome.notes.append("the cut did not happen during the turn")
            return outcome

    await trials.run("client-link cut in a first turn", trial, total=min(trials.trials(), 5))


async def test_edge_link_cut_at_random_points_loses_and_repeats_nothing(master_stack):
    made = master_stack
    url = made.stack.master_url
    proxy = RandomCutProxy(int(url.rsplit(":", 1)[1]))
    try:
        async with session_edge(url, OWNER, made.stack.root) as edge:
            edge.via[url] = f"http://127.0.0.1:{proxy.port}"  # sockets only; REST goes direct
            await cut_trials("edge-link cut", edge, proxy, url)
    finally:
        proxy.close()
