"""Scenario 7 (issue 14 §3): the client is SIGKILLed mid-turn. Its agent must die with it
within 5 s, and a client started again on the same state dir must leave none of its last life's
agents running. The agent's pid comes from its start marker (tests/faults/agent.py)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time

import pytest

from tests.faults import trials
from tests.faults.agent import quiet_prompt_text, wait_for_file
from tests.faults.edge import RecordingEdge
from tests.faults.stacks import one_master, session_edge
from tests.faults.tiers import sigkill
from tests.faults.trials import Outcome

OWNER = "discord:1407"
GONE_WITHIN = 5.0  # issue 14: "0 agent processes left within 5 s"


def alive(pid: int) -> bool:
    """Running (a zombie waiting for its reaper counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):  # ESRCH: it went between open and read
        return False


def written_pid(marker, limit: float = 5.0) -> int:
    """The pid in the agent's marker file, once written (the file exists a moment before)."""
    deadline = time.monotonic() + limit
    while not (text := marker.read_text().strip()):
        assert time.monotonic() < deadline, f"{marker} stayed empty"
        time.sleep(0.01)
    return int(text)


def gone_within(pid: int, limit: float) -> bool:
    deadline = time.monotonic() + limit
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


@pytest.fixture
def master_stack(tmp_path):
    with one_master(tmp_path, OWNER) as made:
        yield made


async def test_client_sigkill_leaves_no_agent_behind(master_stack):
    made = master_stack
    stack = made.stack
    agents = next(a for a in stack.client_proc.args if a.endswith("fault-agents.toml"))
    orphans: list[int] = []
    try:
        async with session_edge(stack.master_url, OWNER, stack.root) as first:
            rest = first.rest(stack.master_url)
            _, nodes = await rest.call("GET", "/v1/edge/nodes")
            node_id = nodes["nodes"][0]["node_id"]

            async def trial(number, rng):
                # A session of its own: a client's sessions end with the client process.
                status, made_session = await rest.call(
                    "POST",
                    f"/v1/edge/nodes/{node_id}/sessions",
                    {"agent_name": "counter", "workspace_path": str(stack.root)},
                )
                assert status == 201, made_session
                edge = RecordingEdge(first.http, first.token, made_session["session_id"])
                await edge.connect(lambda: [stack.master_url], 15)
                tag = f"t{number}"
                await edge.prompt(quiet_prompt_text(tag, 60))  # silent: no broken pipe to die of
                started = made.markers / f"{tag}.started"
                await asyncio.to_thread(wait_for_file, started)
                pid = await asyncio.to_thread(written_pid, started)
                outcome = Outcome(number, f"client killed with agent {pid} running")
                sigkill(stack.client_proc)
                if not await asyncio.to_thread(gone_within, pid, GONE_WITHIN):
                    outcome.notes.append(f"agent {pid} still running {GONE_WITHIN}s after")
                await asyncio.to_thread(stack.start_client, "--agents-file", agents)
                if alive(pid) and not await asyncio.to_thread(gone_within, pid, GONE_WITHIN):
                    outcome.notes.append("and the restarted client left it running")
                    orphans.append(pid)
                await edge.close()
                return outcome

            await trials.run("client SIGKILL", trial)
    finally:
        for pid in orphans:  # what the client under test failed to end: ours to clean up
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
