"""Relay through master replicas (issue 9): `.venv/bin/python bench/replicas.py`.

What issue 9 asks: relay throughput and p99 latency through two master replicas against one
replica, in the same run. Two deployments run side by side on loopback, each with its own
fresh PostgreSQL database (created here, dropped after), its own Redis key prefix on the
machine's Redis, its own shared state directory (one signing key) and its own real client
paired through its first replica:

- **one replica**: one `rawp master --redis-url …`; the session is created on it and its edge
  WebSocket is on it too. With a Redis URL the master runs the Redis relay even alone, so this
  is what scaling out starts from: client frames still go through the session's Redis stream
  and channel (the owner delivers to its own edges from that channel), but one process holds
  both the client link and the edge socket;
- **two replicas**: replicas A and B of one deployment; the session is created on A, which
  therefore holds the client link, and the edge WebSocket is on B — every client frame is
  written to Redis by A and read from Redis by B, and the prompt goes from B to A through
  Redis. This is the path a load balancer gives an edge that lands on the other replica;
- **baseline**: relay.py's master, without a Redis URL (the in-process relay), with its own
  client: what a lone master costs before Redis is configured at all.

Two against one is the figure issue 9 asks for; one replica against the baseline is the price
of Redis itself, which the two-replica figure already contains. The client runs relay.py's
`flood` script agent (jsonl): `agent.text.delta` lines stamped with the system-wide monotonic
clock, so the edge (this process) computes per-frame latency. Paths are warmed up, then
interleaved round by round with relay.py's own turn loop: delivered frames/s in flood mode
(median of the rounds; ratio two / one) and per-frame latency at a paced 1,000 frames/s
(p50 / p99; added = two − one). The issue sets no target: this is the cost of landing on the
other replica, which sticky-session-free load balancing makes the common case. The idle
deployments share the cores with the measured one (they do little: lease renewals, sweeps);
the check that replica A alone held the client link to the end of the run keeps the
two-replica figure honest.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiohttp
import psutil
from relay import (
    EDGE_SECRET,
    FLOOD_FRAMES,
    PACED_RATE,
    PACED_SECONDS,
    ROUNDS,
    Stack,
    measure_paths,
    path_figures,
)

from tests.support import Processes, free_port, wait_for_http

REDIS_URL = os.environ.get("RAWP_BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")
# The maintenance database of a trust-auth PostgreSQL; the bench creates its own databases.
ADMIN_URL = os.environ.get(
    "RAWP_BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)


async def _admin(sql: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(ADMIN_URL, timeout=5)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


async def _forget(prefix: str) -> None:
    """Delete every Redis key the deployment wrote (sessions, leases, buckets)."""
    from redis.asyncio import Redis

    client = Redis.from_url(REDIS_URL, socket_timeout=5, socket_connect_timeout=5)
    try:
        keys = [key async for key in client.scan_iter(match=prefix + "*")]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()


class Deployment(Stack):
    """`count` replicas on one fresh database, one Redis prefix and one state directory (one
    signing key); relay.py's client paired through replica A (`master_url`)."""

    def __init__(self, tmp: Path, processes: Processes, count: int) -> None:
        super().__init__(tmp, processes)
        self.count = count
        self.database = f"rawp_bench_{secrets.token_hex(6)}"
        self.prefix = f"rawp-bench:{secrets.token_hex(6)}:"
        self.urls: list[str] = []
        self.pids: list[int] = []

    @property
    def database_url(self) -> str:
        base = ADMIN_URL.rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://", 1)
        return f"{base}/{self.database}"

    def start_master(self) -> None:
        asyncio.run(_admin(f'CREATE DATABASE "{self.database}"'))
        self.created = True
        for index in range(self.count):  # one after the other: the first makes key and tables
            port = self.master_port if index == 0 else free_port()
            replica = self.processes.rawp(
                "master", "--dev", "--port", str(port), "--state-dir", str(self.tmp / "m"),
                "--database-url", self.database_url, "--redis-url", REDIS_URL,
                "--redis-prefix", self.prefix,
                env={"RAWP_EDGE_SECRET": EDGE_SECRET},
                stdout=(self.tmp / f"replica-{index}.log").open("ab"),
            )  # fmt: skip
            url = f"http://127.0.0.1:{port}"
            wait_for_http(f"{url}/v1/edge/nodes", proc=replica, timeout=60)
            self.urls.append(url)
            self.pids.append(replica.pid)

    def link_holders(self) -> list[int]:
        """The replicas (indexes) with a socket open to the client's port: who holds its link."""
        port = int(self.client_url.rsplit(":", 1)[1])
        return [
            index
            for index, pid in enumerate(self.pids)
            if any(c.raddr and c.raddr.port == port for c in psutil.Process(pid).net_connections())
        ]

    def remove(self) -> None:
        """Drop the database and the Redis keys; after the processes have stopped."""
        if getattr(self, "created", False):
            asyncio.run(_admin(f'DROP DATABASE IF EXISTS "{self.database}" WITH (FORCE)'))
        asyncio.run(_forget(self.prefix))


async def measure(
    memory: Stack, one: Deployment, two: Deployment, rounds: int, flood: int, seconds: float
):
    async with aiohttp.ClientSession() as http:
        sockets = {
            "memory": await memory.open_master_path(http, await memory.edge_token()),
            "one": await one.open_master_path(http, await one.edge_token()),
            # Created on A (A owns the session and holds the client link), read on B.
            "two": await two.open_master_path(http, await two.edge_token(), edge_url=two.urls[1]),
        }
        results = await measure_paths(sockets, rounds, flood, seconds)
    # What the figures claim: the client link was on A, the edge on B, to the end of the run.
    if two.link_holders() != [0]:
        raise RuntimeError(f"client link held by replicas {two.link_holders()}, not A alone")
    return results


def summarise(results: dict) -> dict[str, float]:
    figures = path_figures(results)
    figures["ratio"] = figures["two_fps"] / figures["one_fps"]
    figures["redis_ratio"] = figures["one_fps"] / figures["memory_fps"]
    for name in ("p50", "p99"):
        figures[f"added_{name}_ms"] = figures[f"two_{name}_ms"] - figures[f"one_{name}_ms"]
    return figures


def run(rounds: int = ROUNDS, flood: int = FLOOD_FRAMES, paced_seconds: float = PACED_SECONDS):
    """Start both deployments, measure, stop every process and remove the databases and Redis
    keys (even on error); the figures."""
    processes = Processes()
    deployments: list[Deployment] = []
    with tempfile.TemporaryDirectory(prefix="rawp-bench-replicas-") as temp:
        try:
            memory = Stack(Path(temp) / "memory", processes)  # relay.py's master: no Redis
            memory.start()
            for name, count in (("one", 1), ("two", 2)):
                deployments.append(Deployment(Path(temp) / name, processes, count))
                deployments[-1].start()
            results = asyncio.run(measure(memory, *deployments, rounds, flood, paced_seconds))
        finally:
            processes.close()
            for deployment in deployments:
                deployment.remove()
    return summarise(results)


def report(figures: dict[str, float]) -> str:
    lines = [
        "| measure | one replica (session and edge on it) "
        "| two replicas (client link on A, edge on B) | two against one "
        "| baseline: one master without Redis |",
        "|---|---|---|---|---|",
        f"| flood, frames/s (median of rounds) | {figures['one_fps']:,.0f} | "
        f"{figures['two_fps']:,.0f} | {figures['ratio']:.0%} of one replica | "
        f"{figures['memory_fps']:,.0f} (one replica: {figures['redis_ratio']:.0%} of it) |",
    ]
    for name in ("p50", "p99"):
        lines.append(
            f"| latency {name} at {PACED_RATE:,} frames/s | {figures[f'one_{name}_ms']:.2f} ms"
            f" | {figures[f'two_{name}_ms']:.2f} ms | {figures[f'added_{name}_ms']:+.2f} ms"
            f" | {figures[f'memory_{name}_ms']:.2f} ms |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument(
        "--frames", "--flood", type=int, default=FLOOD_FRAMES, help="frames per flood turn"
    )
    parser.add_argument("--paced-seconds", type=float, default=PACED_SECONDS)
    args = parser.parse_args()
    figures = run(args.rounds, args.frames, args.paced_seconds)
    print(report(figures))
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\n{os.cpu_count()} CPUs; load average after the run: {load}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
