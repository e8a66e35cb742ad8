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


async def test_master_sigkill_mid_turn_loses_and_repeats_nothing(master_stack):
    made = master_stack
    url = made.stack.master_url
    async with session_edge(url, OWNER, made.stack.root) as edge:

        async def trial(number, rng):
            async def strike():
                sigkill(made.master)
                await asyncio.to_thread(made.restart_master)

            at = rng.randrange(0, TURN_FRAMES)
            return await turn_trial(edge, number, lambda: [url], at, strike, made.markers)

        await trials.run("master SIGKILL", trial)
