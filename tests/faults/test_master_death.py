"""Scenarios 1 and 2 (issue 14 §1): the master dies mid-turn and comes back on the same state
dir. The edge reconnects with its cursor; it must receive every frame of the turn exactly once
and in order (the client's buffer holds a whole turn)."""

from __future__ import annotations

import asyncio

import pytest

from tests.faults import trials
from tests.faults.stacks import one_master, session_edge
from tests.faults.tiers import sigkill
from tests.faults.turns import TURN_FRAMES, turn_trial

OWNER = "discord:1401"


@pytest.fixture
def master_stack(tmp_path):
    with one_master(tmp_path, OWNER) as made:
        yield made


async def sigkill_trials(made, scenario: str, strike_at, total: int | None = None) -> None:
    """Trials that SIGKILL the master (and restart it) once `strike_at(rng)` frames of the
    turn have reached the edge."""
    url = made.stack.master_url
    async with session_edge(url, OWNER, made.stack.root) as edge:

        async def trial(number, rng):
            async def strike():
                sigkill(made.master)
                await asyncio.to_thread(made.restart_master)

            at = strike_at(rng)
            return await turn_trial(edge, number, lambda: [url], at, strike, made.markers)

        await trials.run(scenario, trial, total=total)


async def test_master_sigkill_mid_turn_loses_and_repeats_nothing(master_stack):
    await sigkill_trials(master_stack, "master SIGKILL", lambda rng: rng.randrange(0, TURN_FRAMES))


async def test_a_turn_that_ends_before_the_kill_lands_leaves_the_next_trial_a_live_socket(
    master_stack,
):
    """The last frames of a turn may already sit in the edge's socket when the master is killed,
    so the turn ends on the old socket. The next trial must prompt on a new one: a prompt into
    the dead socket is refused as closed, or lost on the wire, before its trial began (seen on
    a busy machine as trials failing in a row). Five trials, each struck at the turn's last
    frame, so that every one ends on the socket of the master it killed."""
    scenario = "master SIGKILL at the turn's end"
    await sigkill_trials(master_stack, scenario, lambda rng: TURN_FRAMES, total=5)
