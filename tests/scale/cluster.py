"""Real `rawp master` replicas on one PostgreSQL and one Redis, and a real client paired with
the first of them (issue 9). Every replica shares one state directory, hence one signing key
(docs/scale-out.md); each writes its log to `replica-N.log` in the test's tmp directory."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from tests.edge.proxy import CuttableProxy
from tests.edge.stack import EDGE_SECRET, Edge, edge_for, read_until, recv
from tests.scale.conftest import REDIS_URL
from tests.support import Processes, free_port, wait_for_http

# A plain-mode script agent (docs/agents.md): every stdout line is one `agent.text.delta`. The
# prompt says how many numbered lines to print and how long to sleep between them, so one
# agent serves a short turn and one long enough to kill a replica in the middle of it.
COUNTER = """\
import os, sys, time
count, pause = os.environ["RAWP_PROMPT"].split()[1:3]
for n in range(int(count)):
    print(f"line {n:04d}", flush=True)
    time.sleep(float(pause))
"""


@dataclass
class Replicas:
    urls: list[str]
    state: Path
    procs: list[subprocess.Popen] = field(default_factory=list)
    logs: list[Path] = field(default_factory=list)
    argv: list[list[str]] = field(default_factory=list)  # each replica's, to restart it

    def restart(self, processes: Processes, index: int) -> None:
        """Starts replica `index` again with its arguments, log and port (tests/faults)."""
        proc = processes.rawp(
            *self.argv[index], env={"RAWP_EDGE_SECRET": EDGE_SECRET},
            stdout=self.logs[index].open("ab"),
        )  # fmt: skip
        wait_for_http(f"{self.urls[index]}/v1/health", proc=proc, timeout=30)
        self.procs[index] = proc


def start_replicas(
    processes: Processes,
    tmp: Path,
    pg_url: str,
    prefix: str,
    *extra: str,
    count: int = 2,
    redis_urls: dict[int, str] | None = None,
) -> Replicas:
    """`count` replicas, each on the machine's Redis unless `redis_urls` names another URL for
    its index (a proxy the test can cut)."""
    made = Replicas([], tmp / "master-state")
    for index in range(count):  # one after the other: the first creates the key and tables
        port, log = free_port(), tmp / f"replica-{index}.log"
        argv = [
            "master", "--dev", "--port", str(port), "--state-dir", str(made.state),
            "--database-url", pg_url, "--redis-url", (redis_urls or {}).get(index, REDIS_URL),
            "--redis-prefix", prefix,
            *extra,
        ]  # fmt: skip
        proc = processes.rawp(
            *argv,
            env={"RAWP_EDGE_SECRET": EDGE_SECRET},
            stdout=log.open("ab"),
        )  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        wait_for_http(f"{url}/v1/health", proc=proc, timeout=30)
        made.urls.append(url)
        made.procs.append(proc)
        made.logs.append(log)
        made.argv.append(argv)
    return made


@dataclass
class Cluster:
    """Replicas A, B, C…; `edge` is the owner's edge on A, where the client is paired."""

    replicas: Replicas
    edge: Edge
    node_id: str
    workspace: Path
    client_state: Path
    proxy: CuttableProxy | None = None  # between every replica and the client, if asked for

    def on(self, index: int) -> Edge:
        """The same user's edge, talking to replica `index`."""
        return Edge(self.replicas.urls[index], self.edge.token, self.edge.http)

    async def create_session(self, agent: str = "counter") -> tuple[str, str]:
        """A session created on replica A (which therefore holds its client link)."""
        status, made = await self.edge.call(
            "POST",
            f"/v1/edge/nodes/{self.node_id}/sessions",
            {"agent_name": agent, "workspace_path": str(self.workspace)},
        )
        assert status == 201, made
        return made["session_id"], made["edge_ws_ticket"]

    async def ticket(self, session_id: str, index: int) -> str:
        """A fresh single-use ticket (A-22), asked of replica `index`."""
        status, body = await self.on(index).call("POST", f"/v1/edge/sessions/{session_id}/tickets")
        assert status == 201, body
        return body["edge_ws_ticket"]

    async def attach(self, session_id: str, index: int):
        """An edge socket on replica `index`, past its greeting."""
        ticket = await self.ticket(session_id, index)
        ws = await asyncio.wait_for(self.on(index).connect(session_id, ticket), 30)
        self.edge.sockets.append(ws)  # closed with the cluster's edge
        greeting = [(await recv(ws))["type"], (await recv(ws))["type"]]
        assert greeting == ["session.capabilities", "tool.catalog.publish"], greeting
        return ws


@contextlib.asynccontextmanager
async def cluster(
    processes: Processes,
    tmp: Path,
    pg_url: str,
    prefix: str,
    count: int = 3,
    redis_urls: dict[int, str] | None = None,
    proxy: bool = False,
    agents: Path | None = None,
    master_args: tuple[str, ...] = (),
    edge_rate: str | None = None,
):
    """`count` replicas and a running client paired through replica A, with the counter agent
    (or the agents of the `agents` file). With `proxy`, the client is paired at a
    CuttableProxy's address, so that the test can cut the replicas' links to it
    (`made.proxy.cut()`). `master_args` go to every replica; `edge_rate` is the owner's Edge
    API budget instead of the default 30/s, for a test that calls as fast as a load generator."""
    # A user of its own: the database is shared by the whole test run, and this user's node
    # listing must hold this client only.
    owner = f"discord:{secrets.randbelow(10**12)}"
    if edge_rate is not None:
        master_args = (*master_args, "--edge-user-rate-limits", f"{owner}={edge_rate}")
    replicas = start_replicas(
        processes, tmp, pg_url, prefix, *master_args, count=count, redis_urls=redis_urls
    )
    workspace, client_port = tmp / "root" / "ws", free_port()
    cuttable = CuttableProxy(client_port) if proxy else None
    public_port = cuttable.port if cuttable else client_port
    workspace.mkdir(parents=True)
    if agents is None:
        agents = tmp / "agents.toml"
        (tmp / "counter.py").write_text(COUNTER)
        agents.write_text(
            f'[agents.counter]\nkind = "script"\nmode = "plain"\n'
            f'command = ["{sys.executable}", "{tmp / "counter.py"}"]\n'
        )
    async with edge_for(replicas.urls[0], owner) as edge:
        status, body = await edge.call("POST", "/v1/edge/pairing-urls")
        assert status == 201, body
        state = tmp / "c"
        pair = processes.rawp(
            "client", "pair", body["pairing_url"], "--name", "scale-box", "--dev",
            "--state-dir", str(state), "--public-address", f"http://127.0.0.1:{public_port}",
        )  # fmt: skip
        out, _ = await asyncio.to_thread(pair.communicate, timeout=60)
        assert pair.returncode == 0, out.decode()
        client = processes.rawp(
            "client", "--dev", "--port", str(client_port), "--state-dir", str(state),
            "--allow-root", str(workspace.parent), "--agents-file", str(agents),
        )  # fmt: skip
        await asyncio.to_thread(read_until, client, "config synced with the master", 60)
        status, nodes = await edge.call("GET", "/v1/edge/nodes")
        assert status == 200 and len(nodes["nodes"]) == 1, nodes
        made = Cluster(replicas, edge, nodes["nodes"][0]["node_id"], workspace, state, cuttable)
        try:
            yield made
        finally:
            await _end_sessions(made)
            if cuttable is not None:
                cuttable.close()


async def _end_sessions(made: Cluster) -> None:
    """End what the test left live: every test shares one database, and a later test's
    replicas would otherwise try to take over these sessions from a client that is gone."""
    for index, proc in enumerate(made.replicas.procs):
        if proc.poll() is not None:
            continue
        with contextlib.suppress(Exception):
            on = made.on(index)
            _, listed = await on.call("GET", f"/v1/edge/sessions?node_id={made.node_id}")
            for session in listed["sessions"]:  # TERMINATED sessions are never listed
                await on.call("DELETE", f"/v1/edge/sessions/{session['session_id']}")
        return
