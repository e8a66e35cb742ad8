"""Scenario 6, second half (issue 14 §2): a prompt sent through another replica while the
replica holding the session's client link has just been SIGKILLed (its own file so that the
suite's two workers can run it beside the first half, tests/conftest.py)."""

from __future__ import annotations

from tests.faults.agent import install
from tests.faults.replicas import QUICK_TAKEOVER
from tests.faults.test_prompt_delivery import delivery_trials
from tests.scale.cluster import cluster


async def test_a_prompt_while_the_holder_was_just_killed_runs_once_or_is_refused(
    processes, tmp_path, pg_url, redis_prefix
):
    redis, prefix = redis_prefix
    agents, _ = install(tmp_path)
    quick = {"agents": agents, "master_args": QUICK_TAKEOVER}
    async with cluster(processes, tmp_path, pg_url, prefix, **quick) as made:
        await delivery_trials(
            "prompt, holder SIGKILL", processes, made, redis, prefix, freeze=False
        )
