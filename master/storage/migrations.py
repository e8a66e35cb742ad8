"""Ordered schema migrations, recorded in the `schema_version` table.

Rules:

1. A database without `schema_version` is new: every table of `schema.metadata` is created as
   it stands today and every migration below is recorded as applied (there is nothing to
   upgrade).
2. An existing database runs, in order, each migration whose number it has not recorded, with
   its record. Everything happens in one transaction: on PostgreSQL a failed step leaves the
   database as it was.
3. Replicas that start on one PostgreSQL database at once do not race (issue 29 §4): the
   transaction first takes the advisory lock of runtime.migration_lock, so the others wait for
   the first one's commit and find the work done. A master on SQLite is one process.
4. A change to `schema.py` ships with a new migration appended here that brings an existing
   database to the same shape (ALTER TABLE …, CREATE TABLE …). Numbers never change.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

from sqlalchemy import insert, inspect, select, text
from sqlalchemy.ext.asyncio import AsyncConnection

from master.storage import schema
from master.storage.db import Database
from master.storage.migration_audit import add_audit_table
from master.storage.migration_budgets import add_budget_tables
from master.storage.migration_edge import add_edge_tables
from runtime import migration_lock

log = logging.getLogger("rawp.master.storage")

Step = Callable[[AsyncConnection], Awaitable[None]]


async def _initial(conn: AsyncConnection) -> None:
    await conn.run_sync(schema.metadata.create_all)


# (number, name, step). Append only.
MIGRATIONS: list[tuple[int, str, Step]] = [
    (1, "initial: users, nodes, pairing and refresh tokens, config scopes, sessions", _initial),
    (2, "edge: sessions.last_activity_at, usage_records, edge_tickets", add_edge_tables),
    (3, "approval_audit (issue 15 §4)", add_audit_table),
    (4, "budget_warnings and usage indexes (issue 16 §4)", add_budget_tables),
]


def head() -> int:
    return MIGRATIONS[-1][0]


async def migrate(db: Database, migrations: list[tuple[int, str, Step]] | None = None) -> list[int]:
    """Bring the database to the last migration; return the numbers applied now."""
    migrations = MIGRATIONS if migrations is None else migrations
    async with db.begin() as conn:
        if not db.is_sqlite:  # rule 3
            await conn.execute(text(migration_lock.TAKE), {"key": migration_lock.MASTER})
        exists = await conn.run_sync(lambda c: inspect(c).has_table("schema_version"))
        if not exists:
            await conn.run_sync(schema.metadata.create_all)
            await _record(conn, migrations)
            log.info("created a new database schema at version %d", migrations[-1][0])
            return [number for number, _, _ in migrations]
        done = set((await conn.execute(select(schema.schema_version.c.version))).scalars())
        applied = []
        for number, name, step in migrations:
            if number in done:
                continue
            await step(conn)
            await _record(conn, [(number, name, step)])
            log.info("applied migration %d: %s", number, name)
            applied.append(number)
        return applied


async def _record(conn: AsyncConnection, steps: list[tuple[int, str, Step]]) -> None:
    now = datetime.now(UTC)
    await conn.execute(
        insert(schema.schema_version),
        [{"version": n, "name": name, "applied_at": now} for n, name, _ in steps],
    )
