"""The approval audit's table (issue 15 §4) on SQLite and PostgreSQL: migration 3 upgrades an
older database, records are listed newest first with their owner, node, age and count bounds,
and `rawp master audit` reads them from the database as a table or as JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta

from sqlalchemy import insert, inspect, text

from master.audit_cli import records, render, since_time
from master.settings import MasterSettings
from master.storage import audit, schema
from master.storage.db import Database
from master.storage.migrations import MIGRATIONS, head, migrate
from rawp.clock import FakeClock

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


async def _fresh(database_url: str) -> Database:
    db = Database(database_url)
    async with db.begin() as conn:  # PostgreSQL is shared by the session: start from nothing
        await conn.run_sync(schema.metadata.drop_all)
        await conn.execute(text("DROP TABLE IF EXISTS schema_version"))
    return db


async def _drop(db: Database) -> None:
    async with db.begin() as conn:
        await conn.run_sync(schema.metadata.drop_all)
        await conn.execute(text("DROP TABLE IF EXISTS schema_version"))
    await db.dispose()


async def _owner_rows(db: Database) -> None:
    """Two users, a node and a session each: what audit rows point at."""
    async with db.begin() as conn:
        for n, user in enumerate(("discord:1", "slack:T1:U2")):
            await conn.execute(insert(schema.users).values(id=user, created_at=T0))
            await conn.execute(
                insert(schema.nodes).values(
                    id=f"node-{n}",
                    user_id=user,
                    device_name="box",
                    client_address="https://box.example",
                    status="active",
                    paired_at=T0,
                )
            )
            await conn.execute(
                insert(schema.sessions).values(
                    id=f"session-{n}",
                    node_id=f"node-{n}",
                    user_id=user,
                    agent_name="demo",
                    status="RUNNING",
                    pinned_limits={},
                    pinned_capabilities={},
                    limits_version=1,
                    capabilities_version=1,
                    created_at=T0,
                    updated_at=T0,
                )
            )


def _row(n: int, minutes: int, outcome: str = audit.ANSWERED, owner: int = 0) -> audit.AuditRow:
    return audit.AuditRow(
        id=f"rec-{n}",
        session_id=f"session-{owner}",
        node_id=f"node-{owner}",
        user_id=("discord:1", "slack:T1:U2")[owner],
        recorded_at=T0 + timedelta(minutes=minutes),
        outcome=outcome,
        actor=None if outcome == audit.EXPIRED else "discord:42",
        platform="discord",
        interaction_id=f"int-{n}",
        option_id="allow" if outcome == audit.ANSWERED else None,
        option_label="Allow once" if outcome == audit.ANSWERED else None,
        tool_name="Bash",
        input_preview="ls -la",
        detail=None,
    )


async def test_migration_3_upgrades_a_version_2_database(database_url):
    db = await _fresh(database_url)
    try:
        assert await migrate(db, MIGRATIONS[:2]) == [1, 2]
        async with db.begin() as conn:  # back to what version 2 had
            await conn.execute(text("DROP TABLE approval_audit"))
        assert await migrate(db, MIGRATIONS[:3]) == [3]
        async with db.connect() as conn:
            assert await conn.run_sync(lambda c: inspect(c).has_table("approval_audit"))
            indexes = await conn.run_sync(
                lambda c: {i["name"] for i in inspect(c).get_indexes("approval_audit")}
            )
        assert {"ix_audit_user_time", "ix_audit_node_time"} <= indexes
        assert await migrate(db) == list(range(4, head() + 1))  # the later ones, once
        assert await migrate(db) == []
    finally:
        await _drop(db)


async def test_records_are_listed_newest_first_by_owner_node_age_and_count(database_url):
    db = await _fresh(database_url)
    try:
        await migrate(db)
        await _owner_rows(db)
        async with db.begin() as conn:
            assert await audit.record(conn, _row(1, 0, audit.REFUSED))
            assert await audit.record(conn, _row(2, 5))
            assert await audit.record(conn, _row(3, 10, audit.EXPIRED))
            assert await audit.record(conn, _row(4, 7, owner=1))
            assert not await audit.record(conn, _row(2, 99))  # the same id again: kept once
        async with db.connect() as conn:
            mine = await audit.listing(conn, user_id="discord:1")
            assert [r.id for r in mine] == ["rec-3", "rec-2", "rec-1"]
            assert mine[1] == _row(2, 5)  # times come back aware UTC on both databases
            everyone = await audit.listing(conn)
            assert [r.id for r in everyone] == ["rec-3", "rec-4", "rec-2", "rec-1"]
            assert [r.id for r in await audit.listing(conn, node_id="node-1")] == ["rec-4"]
            recent = await audit.listing(conn, since=T0 + timedelta(minutes=5))
            assert [r.id for r in recent] == ["rec-3", "rec-4", "rec-2"]
            assert [r.id for r in await audit.listing(conn, limit=2)] == ["rec-3", "rec-4"]
            both = await audit.listing(conn, since=T0, limit=2)
            assert [r.id for r in both] == ["rec-3", "rec-4"]
            assert await audit.listing(conn, user_id="discord:1", node_id="node-1") == []
            assert (await audit.session_of(conn, "discord:1", "session-0")).node_id == "node-0"
            assert await audit.session_of(conn, "discord:1", "session-1") is None
            assert await audit.by_id(conn, "slack:T1:U2", "rec-1") is None
    finally:
        await _drop(db)


async def test_the_audit_command_reads_the_database(tmp_path, database_url):
    db = await _fresh(database_url)
    try:
        await migrate(db)
        await _owner_rows(db)
        async with db.begin() as conn:
            await audit.record(conn, _row(1, 0, audit.REFUSED))
            await audit.record(conn, _row(2, 5))
            await audit.record(conn, _row(3, 7, owner=1))
        settings = MasterSettings(state_dir=tmp_path / "state", database_url=database_url)
        clock = FakeClock(T0 + timedelta(minutes=8))
        found = await records(settings, clock, user=None, node=None, since="4m", limit=10)
        assert [r["record_id"] for r in found] == ["rec-3", "rec-2"]
        found = await records(settings, clock, user="discord:1", node=None, since=None, limit=10)
        assert [r["record_id"] for r in found] == ["rec-2", "rec-1"]
        table = render(found, as_json=False).splitlines()
        assert table[0].split()[:4] == ["TIME", "(UTC)", "OUTCOME", "WHO"]
        assert table[1].split()[:5] == [
            "2026-12-01T12:05:00.000Z",
            "answered",
            "discord:42",
            "Allow",
            "once",
        ]
        assert "refused" in table[2] and "Bash" in table[2] and "ls -la" in table[2]
        assert json.loads(render(found, as_json=True)) == {"records": found}
        assert render([], as_json=False) == "no approval records"
    finally:
        await _drop(db)


def test_since_takes_an_age_or_an_iso_time():
    now = T0
    assert since_time(None, now) is None
    assert since_time("30m", now) == now - timedelta(minutes=30)
    assert since_time("7d", now) == now - timedelta(days=7)
    assert since_time("2026-11-30T00:00:00Z", now) == datetime(2026, 11, 30, tzinfo=UTC)


def run_cli(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAWP_")}
    return subprocess.run(
        [sys.executable, "-m", "rawp_app.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def test_the_audit_command_runs_as_a_process(tmp_path):
    state = tmp_path / "state"
    shown = run_cli("master", "--state-dir", str(state), "audit", "--json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout) == {"records": []}
    plain = run_cli("master", "--state-dir", str(state), "audit", "--since", "soon")
    assert plain.returncode != 0 and "--since" in plain.stderr
