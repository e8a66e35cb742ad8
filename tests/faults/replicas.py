"""Three master replicas on PostgreSQL and Redis (tests/scale/cluster.py) running the trials'
counter agent, and what the fault scenarios need of them: which replica holds a session's
client link (its lease in Redis), waiting for a live one to hold it, restarting one."""

from __future__ import annotations

import asyncio
import re
import time

from tests.faults.edge import RecordingEdge
from tests.scale.cluster import Cluster

REPLICA_ID = re.compile(r"as replica ([0-9a-f]+)")
# A dead holder's sessions are free after one short lease and found by a quick sweep: a
# takeover in about 1.3 s instead of the default 5 + 2 (master --lease-seconds,
# --takeover-sweep-seconds), and a frozen holder's silence is answered after 2 s instead of
# 6 (--delivery-seconds), so twenty trials of each fit the suite's budget.
QUICK_TAKEOVER = (
    "--lease-seconds", "1", "--takeover-sweep-seconds", "0.3", "--delivery-seconds", "1.5",
)  # fmt: skip


def replica_ids(made: Cluster) -> dict[str, int]:
    """Each live replica's current id (a restarted one logs a new id to the same log)."""
    ids = {}
    for index, (proc, log) in enumerate(zip(made.replicas.procs, made.replicas.logs, strict=True)):
        found = REPLICA_ID.findall(log.read_text())
        if found and proc.poll() is None:
            ids[found[-1]] = index
    return ids


async def holder(made: Cluster, redis, prefix: str, session_id: str, limit: float = 30.0) -> int:
    """The index of the live replica whose lease holds the session, once there is one — after
    a kill, when another has taken the session over."""
    deadline = time.monotonic() + limit
    owner = None
    while time.monotonic() < deadline:
        owner = await redis.get(f"{prefix}own:{{{session_id}}}")
        index = replica_ids(made).get(owner.decode()) if owner else None
        if index is not None:
            return index
        await asyncio.sleep(0.05)  # a retry interval: the lease is Redis state, not an event
    raise TimeoutError(f"no live replica held session {session_id} within {limit}s: {owner}")


def edge_on(made: Cluster, session_id: str) -> RecordingEdge:
    return RecordingEdge(made.edge.http, made.edge.token, session_id)


async def place(edge: RecordingEdge, url: str, limit: float = 30.0) -> None:
    """Puts the edge's socket on replica `url` (a new socket, with its cursor) unless it is
    there already."""
    if edge.ws is not None and edge.logs[-1].url == url:
        return
    if edge.ws is not None:
        await edge.ws.close()
        edge.ws = None
    await edge.connect(lambda: [url], limit)
