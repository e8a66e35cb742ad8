"""The stacks the fault scenarios break: one master and one client (tests/edge/stack.py) running
the trials' counter agent, with the helpers to kill and restart the master on its state dir."""

from __future__ import annotations

import contextlib
import subprocess
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from tests.edge.stack import EDGE_SECRET, Stack, start_stack, user_token
from tests.faults.agent import install
from tests.faults.edge import RecordingEdge
from tests.faults.tiers import RandomCutProxy
from tests.support import Processes, wait_for_http


@dataclass
class OneMaster:
    stack: Stack
    markers: Path

    @property
    def master(self) -> subprocess.Popen:
        return next(p for p in self.stack.processes.procs if p.args[3] == "master")

    def restart_master(self) -> None:
        """The master again, same port and state dir (so the same SQLite sessions)."""
        dead = self.master
        assert dead.poll() is not None, "restart_master: the master is still running"
        self.stack.processes.procs.remove(dead)
        proc = self.stack.processes.rawp(
            *self.stack.master_args,
            env={"RAWP_EDGE_SECRET": EDGE_SECRET},
            stdout=self.stack.master_log.open("ab"),
        )
        wait_for_http(f"{self.stack.master_url}/v1/health", proc=proc, timeout=30)


@contextlib.contextmanager
def one_master(tmp: Path, subject: str):
    """A master, a client behind a `RandomCutProxy` with the counter agent; all ended after."""
    processes = Processes()
    made = None
    try:
        made = start_stack(processes, tmp, subject, proxy_class=RandomCutProxy)
        agents, markers = install(tmp)
        made.start_client("--agents-file", str(agents))
        yield OneMaster(made, markers)
    finally:
        if made is not None:
            made.proxy.close()
        processes.close()


@contextlib.asynccontextmanager
async def session_edge(master_url: str, subject: str, workspace: Path):
    """A new session of the counter agent and the owner's recording edge on it (no socket
    yet)."""
    token = await user_token(master_url, subject)
    async with aiohttp.ClientSession() as http:
        edge = RecordingEdge(http, token, "")
        status, nodes = await edge.rest(master_url).call("GET", "/v1/edge/nodes")
        assert status == 200 and len(nodes["nodes"]) == 1, nodes
        status, made = await edge.rest(master_url).call(
            "POST",
            f"/v1/edge/nodes/{nodes['nodes'][0]['node_id']}/sessions",
            {"agent_name": "counter", "workspace_path": str(workspace)},
        )
        assert status == 201, made
        edge.session_id = made["session_id"]
        try:
            yield edge
        finally:
            await edge.close()
