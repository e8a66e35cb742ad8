"""Master replicas starting together on one new PostgreSQL database migrate it once (issue 29
§4; master.storage.migrations rule 3), as real `rawp master` processes. In one process, each
replica with its own engine, for the master's and the gateway's schema alike:
tests/runtime/test_migrate.py (the one runner, runtime.migrate)."""

from __future__ import annotations

import asyncio

from sqlalchemy import select

from master.storage.db import Database
from master.storage.migrations import MIGRATIONS
from master.storage.schema import schema_version
from tests.edge.stack import EDGE_SECRET
from tests.gateway.store_support import drop_postgres_database, fresh_postgres_database
from tests.support import free_port, wait_for_http


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
