"""Ordered schema migrations, recorded in the `schema_version` table, run by the project's one
migration runner (runtime.migrate).

Rules:

1. A database without `schema_version` is new: every table of `schema.metadata` is created as
   it stands today and every migration below is recorded as applied (there is nothing to
   upgrade).
2. An existing database runs, in order, each migration whose number it has not recorded, with
   its record. Everything happens in one transaction: on PostgreSQL a failed step leaves the
   database as it was.
3. Replicas that start on one PostgreSQL database at once do not race (issue 29 §4): the
   transaction first takes the advisory lock (runtime.migrate rule 4, key `LOCK_KEY`), so the
   others wait for the first one's commit and find the work done. A master on SQLite is one
   process.
4. A change to `schema.py` ships with a new migration appended here that brings an existing
   database to the same shape (ALTER TABLE …, CREATE TABLE …). Numbers never change.
"""

from __future__ import annotations

import logging

from sqlalchemy.ext.asyncio import AsyncConnection

from master.storage import schema
from master.storage.migration_audit import add_audit_table
from master.storage.migration_budgets import add_budget_tables
from master.storage.migration_edge import add_edge_tables
from master.storage.migration_schedules import add_schedules_table
from runtime import migrate as migrate_runner
from runtime.migrate import Step

log = logging.getLogger("rawp.master.storage")


async def _initial(conn: AsyncConnection) -> None:
    await conn.run_sync(schema.metadata.create_all)


# (number, name, step). Append only.
MIGRATIONS: list[tuple[int, str, Step]] = [
    (1, "initial: users, nodes, pairing and refresh tokens, config scopes, sessions", _initial),
    (2, "edge: sessions.last_activity_at, usage_records, edge_tickets", add_edge_tables),
    (3, "approval_audit (issue 15 §4)", add_audit_table),
    (4, "budget_warnings and usage indexes (issue 16 §4)", add_budget_tables),
    (5, "schedules: scheduled prompts (issue 30 §5)", add_schedules_table),
]


# Rule 3's advisory lock key: "rawpms" (the gateway has its own, its tables differ).
LOCK_KEY = 0x7261_7770_6D73

SCHEMA = migrate_runner.Schema(
    metadata=schema.metadata,
    versions=schema.schema_version,
    markers=(schema.schema_version.name,),
    migrations=MIGRATIONS,
    lock_key=LOCK_KEY,
    stamp=lambda moment: moment,
    log=log,
    created="created a new database schema at version %d",
    applied="applied migration %d: %s",
)


head = SCHEMA.head
migrate = SCHEMA.migrate  # (db, migrations=None) → the numbers applied now
