"""Three `rawp gateway` replicas on one conversation store and one Redis prefix, for the
failover tests (tests/gateway/test_replicas_failover*.py; issue 19 §2–3).

Each replica logs to `replica-N.log`; its replica id (random per process) is read from the
line it logs on joining the cluster, and the session's renderer is whichever id holds the
session's lease in Redis. How a replica is reached (its Bolt endpoint on Slack, its gateway
connection on Discord) is the platform's part: `env_for(n)` is its environment at each start,
`probe(n)` says whether replica `n` can take an event now.
"""

from __future__ import annotations

import asyncio
import re
import signal
import subprocess
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from tests.gateway.store_support import drop_postgres_database, fresh_postgres_database
from tests.scale.conftest import REDIS_URL
from tests.support import Processes

REPLICAS = 3
JOINED = re.compile(r"gateway replica (\w+) joined the cluster")


@pytest.fixture
async def shared_store(tmp_path):
    """Where every replica keeps conversations: a fresh database on the real PostgreSQL, as a
    deployment of several replicas would (docs/scale-out.md), dropped after the test; the
    `rawp gateway` arguments that name it. Skipped, saying why, where no PostgreSQL answers."""
    url, name = await fresh_postgres_database()
    try:
        yield ["--database-url", url, "--state-dir", str(tmp_path / "state")]
    finally:
        await drop_postgres_database(name)


class Gateways:
    """The replica processes: each one's environment, log, process and replica id."""

    def __init__(
        self,
        processes: Processes,
        stack,
        tmp: Path,
        prefix: str,
        env_for: Callable[[int], dict[str, str]],
        probe: Callable[[int], Awaitable[bool]],
        store_args: list[str],
    ) -> None:
        self.processes = processes
        self.args = [
            "gateway", "--master-url", stack.master_url, *store_args,
            "--workspace", str(stack.root), "--redis-url", REDIS_URL, "--redis-prefix", prefix,
        ]  # fmt: skip
        self.prefix = prefix
        self.env_for = env_for  # called at each start: a restart may need a new port
        self.probe = probe
        self.logs = [tmp / f"replica-{n}.log" for n in range(REPLICAS)]
        self.procs: list = [None] * REPLICAS
        self.ids: dict[str, int] = {}  # replica id → index, for the processes known to be up
        self.starts = [0] * REPLICAS  # each log holds one "joined" line per start

    def start(self, n: int) -> None:
        with self.logs[n].open("ab") as log:
            self.procs[n] = self.processes.rawp(*self.args, env=self.env_for(n), stdout=log)
        self.starts[n] += 1

    async def up(self, n: int, timeout_s: float = 90) -> None:
        """Replica `n` has joined the cluster and can take an event."""
        deadline = time.monotonic() + timeout_s
        while not (self.refresh(n) and await self.probe(n)):
            if self.procs[n].poll() is not None:
                raise AssertionError(f"replica {n} exited: see {self.logs[n]}")
            if time.monotonic() > deadline:
                raise AssertionError(f"replica {n} did not come up: see {self.logs[n]}")
            await asyncio.sleep(0.1)

    async def ready(self) -> list[int]:
        """The replicas up now (a restarted one is used once it is: no trial waits for it)."""
        return [
            n
            for n in range(REPLICAS)
            if self.procs[n].poll() is None and self.refresh(n) and await self.probe(n)
        ]

    def refresh(self, n: int) -> bool:
        """Whether replica `n`'s current process has joined (its id is then known)."""
        if n in self.ids.values():
            return True
        found = JOINED.findall(self.logs[n].read_text("utf-8"))
        if len(found) >= self.starts[n]:
            self.ids[found[-1]] = n
            return True
        return False

    def kill_and_restart(self, n: int) -> None:
        """SIGKILL replica `n` and start it again (not waited for: `up` when it is needed)."""
        self.procs[n].send_signal(signal.SIGKILL)
        self.procs[n].wait(timeout=30)
        self.ids = {replica: m for replica, m in self.ids.items() if m != n}
        self.start(n)

    async def holder(self, client, timeout_s: float = 30) -> int:
        """The index of the replica whose id holds the (only) session's lease."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            keys = [key async for key in client.scan_iter(match=f"{self.prefix}own:*")]
            owner = (await client.get(keys[0])) if keys else None
            for n in range(REPLICAS):
                self.refresh(n)
            if owner is not None and owner.decode() in self.ids:
                return self.ids[owner.decode()]
            await asyncio.sleep(0.1)
        raise AssertionError("no known replica holds the session's lease")

    def stop(self) -> None:
        for proc in self.procs:
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:  # a replica that ignores SIGTERM is killed
                proc.kill()
                proc.wait(timeout=30)


def median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2] if values else 0.0
