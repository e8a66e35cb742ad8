"""Numbered schema migrations, one runner for every RAWP program (issue 29 §1, §4): the master's
(master.storage.migrations) and the gateway's conversation store (gateway.storage.store_schema).
Each program keeps its own tables, migration list, version table and lock key (`Schema`).

Rules:

1. A database holding none of the program's `marker` tables is new: every table of its
   metadata is created as it stands today and every migration is recorded as applied.
2. Otherwise each migration whose number the version table has not recorded runs, in order,
   with its record (a database made before it had a version table gets one, and runs them all).
3. Everything happens in one write transaction (PostgreSQL and SQLite both roll DDL back): a
   failed step leaves the database as it was.
4. Replicas that start on one PostgreSQL database at once do not race: the transaction first
   takes a transaction-scoped advisory lock (`TAKE`, with the program's key), so the others
   wait for the first one's commit and find the work done. The lock ends with the transaction,
   also when a replica dies in the middle (its connection closes), so nothing is ever left
   locked. SQLite needs no such lock: a migrating write transaction holds the file's write lock.
5. Numbers never change; a change to the tables ships with a new migration appended.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import Column, Integer, MetaData, String, Table, insert, inspect, select, text
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.types import TypeEngine

from runtime.database import Database

TAKE = "SELECT pg_advisory_xact_lock(:key)"  # rule 4

Step = Callable[[AsyncConnection], Awaitable[None]]
Migration = tuple[int, str, Step]  # (number, name, step)


def version_table(name: str, metadata: MetaData, applied_at: TypeEngine) -> Table:
    """A program's version table (rule 2): its name and how it stores a time are its own (an
    existing database keeps its table), the columns are every program's."""
    return Table(
        name,
        metadata,
        Column("version", Integer, primary_key=True),
        Column("name", String(200), nullable=False),
        Column("applied_at", applied_at, nullable=False),
    )


@dataclass(frozen=True)
class Schema:
    """One program's migrations and what the runner needs to know of them."""

    metadata: MetaData  # every table as it stands today (rule 1)
    versions: Table  # `version_table`: what has been applied (rule 2)
    markers: tuple[str, ...]  # tables whose absence means a new database (rule 1)
    migrations: list[Migration]  # append only (rule 5)
    lock_key: int  # rule 4: each program its own, so a master and a gateway never wait
    stamp: Callable[[datetime], object]  # `applied_at` as the version table stores it
    log: logging.Logger
    created: str  # the log line of rule 1, with the version
    applied: str  # the log line of rule 2, with the number and the name

    def head(self) -> int:
        return self.migrations[-1][0]

    async def migrate(self, db: Database, migrations: list[Migration] | None = None) -> list[int]:
        """Bring the database to the last migration (of `migrations`, a test's longer list, or
        the program's own); return the numbers applied now."""
        return await _migrate(db, self, self.migrations if migrations is None else migrations)


async def _migrate(db: Database, schema: Schema, migrations: list[Migration]) -> list[int]:
    async with db.write() as conn:
        if not db.is_sqlite:  # rule 4
            await conn.execute(text(TAKE), {"key": schema.lock_key})
        tables = set(await conn.run_sync(lambda c: inspect(c).get_table_names()))
        if not tables & set(schema.markers):  # rule 1
            await conn.run_sync(schema.metadata.create_all)
            await _record(conn, schema, migrations)
            schema.log.info(schema.created, migrations[-1][0])
            return [number for number, _, _ in migrations]
        await conn.run_sync(schema.versions.create, checkfirst=True)  # rule 2
        done = set((await conn.execute(select(schema.versions.c.version))).scalars())
        applied = []
        for number, name, step in migrations:
            if number in done:
                continue
            await step(conn)
            await _record(conn, schema, [(number, name, step)])
            schema.log.info(schema.applied, number, name)
            applied.append(number)
        return applied


async def _record(conn: AsyncConnection, schema: Schema, steps: list[Migration]) -> None:
    now = schema.stamp(datetime.now(UTC))
    await conn.execute(
        insert(schema.versions),
        [{"version": n, "name": name, "applied_at": now} for n, name, _ in steps],
    )
