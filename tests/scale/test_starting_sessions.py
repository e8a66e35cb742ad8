"""A session being started is not another replica's to take over (master.edge.sessions.held_links
rule 1).

A replica claims a new session's lease only once the client has accepted it, so for a moment
the row is INIT and unowned. A takeover sweep on another replica that took it then found a
client without the session and ended it: the edge that asked got `404 SESSION_NOT_FOUND` "the
session was ended while it started" (seen under load in tests/scale/test_cross_relay.py). Here
an INIT row nobody holds, as the creator leaves it, is put beside a real session on two real
replicas with quick sweeps: while young it stays INIT through many sweeps; once older than
any start can take (its creator died mid-start) a sweep takes it and it ends."""

from __future__ import annotations

import asyncio
import uuid

from sqlalchemy import text

from master.storage.db import Database
from tests.scale.cluster import cluster

QUICK = ("--lease-seconds", "1", "--takeover-sweep-seconds", "0.2")

# A copy of a real session's row as a new, unowned INIT row (PostgreSQL's row <-> JSON).
COPY_AS_STARTING = text(
    "INSERT INTO sessions SELECT (jsonb_populate_record(NULL::sessions, to_jsonb(s)"
    " || jsonb_build_object('id', CAST(:new AS text), 'status', 'INIT',"
    " 'created_at', now(), 'updated_at', now(), 'terminated_at', NULL))).*"
    " FROM sessions s WHERE s.id = :sid"
)


async def status_of(db: Database, session_id: str) -> str:
    async with db.connect() as conn:
        found = await conn.scalar(
            text("SELECT status FROM sessions WHERE id = :id"), {"id": session_id}
        )
    return str(found)


async def test_a_young_init_session_is_left_to_its_creator_and_an_old_one_is_swept(
    processes, tmp_path, pg_url, redis_prefix
):
    _, prefix = redis_prefix
    db = Database(pg_url)
    try:
        async with cluster(processes, tmp_path, pg_url, prefix, count=2, master_args=QUICK) as made:
            real, _ = await made.create_session()
            starting = str(uuid.uuid4())
            async with db.begin() as conn:
                await conn.execute(COPY_AS_STARTING, {"new": starting, "sid": real})
            await asyncio.sleep(2.0)  # ten sweeps on each replica
            assert await status_of(db, starting) == "INIT"

            async with db.begin() as conn:  # its creator died mid-start, long ago
                await conn.execute(
                    text(
                        "UPDATE sessions SET created_at = now() - interval '10 minutes'"
                        " WHERE id = :id"
                    ),
                    {"id": starting},
                )
            for _ in range(200):  # a retry interval: the status is database state, not an event
                if await status_of(db, starting) == "TERMINATED":
                    break
                await asyncio.sleep(0.1)
            assert await status_of(db, starting) == "TERMINATED"
            assert await status_of(db, real) == "RUNNING"  # the real one was never touched
    finally:
        await db.dispose()
