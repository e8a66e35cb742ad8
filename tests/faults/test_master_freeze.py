"""Scenario 2 (issue 14 §1): the master is frozen (SIGSTOP) mid-turn while the client writes
the rest of the turn into its socket, then killed and restarted on the same state dir; the
edge reconnects with its cursor and must receive every frame once, in order. (Its own file
so that the suite's two workers run it beside scenario 1, tests/conftest.py.)"""

from __future__ import annotations

import asyncio

import pytest

from tests.faults import trials
from tests.faults.agent import wait_for_file
from tests.faults.stacks import one_master, session_edge
from tests.faults.tiers import sigkill, sigstop
from tests.faults.turns import TURN_FRAMES, turn_trial

OWNER = "discord:1402"


@pytest.fixture
def master_stack(tmp_path):
    with one_master(tmp_path, OWNER) as made:
        yield made


async def test_master_sigstop_then_sigkill_mid_turn_loses_and_repeats_nothing(master_stack):
    made = master_stack
    url = made.stack.master_url
    async with session_edge(url, OWNER, made.stack.root) as edge:

        async def trial(number, rng):
            async def strike():
                # Frozen while the client writes the rest of the turn into its socket, then
                # killed: what the frozen master had read but not relayed dies with it.
                sigstop(made.master)
                await asyncio.to_thread(wait_for_file, made.markers / f"t{number}.done")
                sigkill(made.master)
                await asyncio.to_thread(made.restart_master)

            at = rng.randrange(0, TURN_FRAMES)
            return await turn_trial(edge, number, lambda: [url], at, strike, made.markers)

        await trials.run("master SIGSTOP+SIGKILL", trial)
