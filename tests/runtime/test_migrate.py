"""The one migration runner (runtime.migrate) on a real PostgreSQL: replicas migrating one fresh
database at once migrate it once, for each program that uses it (the master's schema and the
gateway's conversation store), and an existing database's pending step runs once too. Each
replica has its own engine, as each process has. Real `rawp master` processes racing:
tests/master/test_migration_lock.py."""

from __future__ import annotations

import asyncio
import logging

import pytest
from sqlalchemy import Column, Integer, MetaData, String, Table, func, select, text

from gateway.storage import store_schema
from gateway.storage.store_db import Database as StoreDatabase
from master.storage import migrations as master_migrations
from master.storage.db import Database as MasterDatabase
from runtime import migrate
from runtime.database import Database
from tests.gateway.store_support import drop_postgres_database, fresh_postgres_database

REPLICAS = 4

PROGRAMS = {
    "master": (MasterDatabase, master_migrations.SCHEMA, master_migrations.MIGRATIONS),
    "gateway": (StoreDatabase, store_schema.SCHEMA, store_schema.MIGRATIONS),
}


async def _versions(db: Database, schema: migrate.Schema) -> list[tuple[int, int]]:
    async with db.connect() as conn:
        counted = await conn.execute(
            select(schema.versions.c.version, func.count()).group_by(schema.versions.c.version)
        )
        return sorted(counted.all())


@pytest.mark.parametrize("program", sorted(PROGRAMS))
async def test_replicas_migrating_one_new_database_at_once_migrate_it_once(program):
    opener, schema, steps = PROGRAMS[program]
    url, name = await fresh_postgres_database()
    replicas = [opener(url) for _ in range(REPLICAS)]
    try:
        runs = (schema.migrate(db, steps) for db in replicas)
        results = await asyncio.gather(*runs, return_exceptions=True)
        failures = [r for r in results if isinstance(r, BaseException)]
        assert not failures, f"a replica failed to migrate: {failures!r}"
        every = [number for number, _, _ in steps]
        assert sorted(results, key=len) == [[]] * (REPLICAS - 1) + [every]  # one did the work
        assert await _versions(replicas[0], schema) == [(n, 1) for n in every]  # recorded once
    finally:
        for db in replicas:
            await db.dispose()
        await drop_postgres_database(name)


# A toy program: version 1 makes `things`; version 2 adds a column, which fails if run twice.
_metadata = MetaData()
_versions_table = migrate.version_table("toy_schema_version", _metadata, String(40))
_things = Table("things", _metadata, Column("id", Integer, primary_key=True))
TOY = migrate.Schema(
    metadata=_metadata,
    versions=_versions_table,
    markers=("toy_schema_version",),
    migrations=[],  # each test says its own
    lock_key=0x7261_7770_7459,
    stamp=lambda moment: moment.isoformat(),
    log=logging.getLogger("rawp.test.toy"),
    created="created the toy at version %d",
    applied="applied toy migration %d: %s",
)


async def _add_label(conn) -> None:
    await conn.execute(text("ALTER TABLE things ADD COLUMN label TEXT"))


async def _create_all(conn) -> None:
    await conn.run_sync(_metadata.create_all)


async def test_an_existing_databases_pending_step_runs_once_under_the_lock():
    url, name = await fresh_postgres_database()
    first = Database(url)
    replicas = [Database(url) for _ in range(REPLICAS)]
    try:
        assert await TOY.migrate(first, [(1, "things", _create_all)]) == [1]
        both = [(1, "things", _create_all), (2, "things.label", _add_label)]
        runs = (TOY.migrate(db, both) for db in replicas)
        results = await asyncio.gather(*runs, return_exceptions=True)
        failures = [r for r in results if isinstance(r, BaseException)]
        assert not failures, f"a replica failed to migrate: {failures!r}"  # a twice-run ALTER
        assert sorted(results, key=len) == [[]] * (REPLICAS - 1) + [[2]]
        assert await _versions(first, TOY) == [(1, 1), (2, 1)]
    finally:
        for db in (first, *replicas):
            await db.dispose()
        await drop_postgres_database(name)


async def test_a_new_sqlite_database_is_created_at_the_last_version(tmp_path):
    db = Database(tmp_path / "toy.db")
    try:
        both = [(1, "things", _create_all), (2, "things.label", _add_label)]
        assert await TOY.migrate(db, both) == [1, 2]  # created as it stands: no ALTER
        assert await TOY.migrate(db, both) == []
        assert await _versions(db, TOY) == [(1, 1), (2, 1)]
    finally:
        await db.dispose()
