"""Opening an SQLite file another connection is writing to (runtime.database rule 2).

Turning a file into WAL needs it to itself. When another connection holds the write lock of a
file not yet in WAL mode, SQLite answers `PRAGMA journal_mode=WAL` with "database is locked" at
once, without its busy timeout. Four gateway replicas starting on one new file met this: one
replica's first transaction held the lock while the file was being made, and the replicas that
connected meanwhile failed to start (CI, stop 40). A connection must wait for the lock instead.
"""

from __future__ import annotations

import asyncio
import sqlite3

from sqlalchemy import text

from runtime.database import Database, SQLite

HELD_S = 0.3


async def test_a_connection_waits_for_a_write_on_a_file_not_yet_in_wal_mode(tmp_path):
    target = tmp_path / "db.sqlite3"
    other = sqlite3.connect(target, isolation_level=None, check_same_thread=False)
    other.execute("CREATE TABLE t (x INTEGER)")  # a file in SQLite's default (rollback) mode
    other.execute("BEGIN IMMEDIATE")
    other.execute("INSERT INTO t VALUES (1)")  # the write lock, held HELD_S
    db = Database(target, SQLite(explicit_begin=True, private=True))
    try:
        # The group owns the write: one that fails at once (the old code) ends the wait below
        # and is raised from the group.
        async with asyncio.TaskGroup() as group:
            opening = group.create_task(_write_one(db))
            await asyncio.sleep(HELD_S)
            assert not opening.done()  # it waits, rather than failing at once
            other.execute("COMMIT")
        assert opening.result() == "wal"
        async with db.connect() as conn:
            rows = (await conn.execute(text("SELECT x FROM t ORDER BY x"))).scalars().all()
        assert rows == [1, 2]  # both writes, neither lost
    finally:
        other.close()
        await db.dispose()


async def _write_one(db: Database) -> str:
    async with db.write() as conn:
        await conn.execute(text("INSERT INTO t VALUES (2)"))
        return (await conn.execute(text("PRAGMA journal_mode"))).scalar_one()
