"""Master replicas starting together on one new PostgreSQL database migrate it once (issue 29
§4; master.storage.migrations rule 3): in one process, each replica with its own engine as
each process has; and as real `rawp master` processes."""

from __future__ import annotations

import asyncio

from sqlalchemy import func, select

from master.storage.db import Database
from master.storage.migrations import MIGRATIONS, migrate
from master.storage.schema import schema_version
from tests.edge.stack import EDGE_SECRET
from tests.gateway.store_support import drop_postgres_database, fresh_postgres_database
from tests.support import free_port, wait_for_http

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


async def test_two_master_processes_starting_together_on_a_new_database_both_serve(
    processes, tmp_path
):
    """The same with real `rawp master` replicas (each its own state directory: the signing
    key is not what this is about), started at the same moment."""
    url, name = await fresh_postgres_database()
    try:
        procs, urls = [], []
        for index in range(2):
            port = free_port()
            argv = ["master", "--dev", "--port", str(port), "--database-url", url,
                    "--state-dir", str(tmp_path / f"state-{index}")]  # fmt: skip
            log = (tmp_path / f"replica-{index}.log").open("ab")
            procs.append(processes.rawp(*argv, env={"RAWP_EDGE_SECRET": EDGE_SECRET}, stdout=log))
            urls.append(f"http://127.0.0.1:{port}/v1/health")
        for proc, health in zip(procs, urls, strict=True):
            await asyncio.to_thread(wait_for_http, health, 60, proc)
        db = Database(url)
        try:
            async with db.connect() as conn:
                versions = (await conn.execute(select(schema_version.c.version))).scalars()
                assert sorted(versions) == [number for number, _, _ in MIGRATIONS]
        finally:
            await db.dispose()
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            await asyncio.to_thread(proc.wait, 30)
        await drop_postgres_database(name)
