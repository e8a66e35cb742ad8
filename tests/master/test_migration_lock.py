"""Master replicas starting together on one new PostgreSQL database migrate it once (issue 29
§4; master.storage.migrations rule 3): each replica has its own engine, as each process does."""

from __future__ import annotations

import asyncio

from sqlalchemy import func, select

from master.storage.db import Database
from master.storage.migrations import MIGRATIONS, migrate
from master.storage.schema import schema_version
from tests.gateway.store_support import drop_postgres_database, fresh_postgres_database

REPLICAS = 4


async def test_replicas_migrating_one_new_database_at_once_migrate_it_once():
    url, name = await fresh_postgres_database()
    replicas = [Database(url) for _ in range(REPLICAS)]
    try:
        results = await asyncio.gather(*(migrate(db) for db in replicas), return_exceptions=True)
        failures = [r for r in results if isinstance(r, BaseException)]
        assert not failures, f"a replica failed to migrate: {failures!r}"
        every = [number for number, _, _ in MIGRATIONS]
        assert sorted(results, key=len) == [[]] * (REPLICAS - 1) + [every]  # one did the work
        async with replicas[0].connect() as conn:
            versions = await conn.execute(
                select(schema_version.c.version, func.count()).group_by(schema_version.c.version)
            )
            assert sorted(versions.all()) == [(number, 1) for number in every]  # recorded once
    finally:
        for db in replicas:
            await db.dispose()
        await drop_postgres_database(name)
