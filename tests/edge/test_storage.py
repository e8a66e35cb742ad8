"""Migration 2 brings a database created before the Edge API to today's shape (SQLite and
PostgreSQL), and usage sums follow the calendar periods of A-19."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import inspect, text

from master.edge.usage.usage import UsageBook, period_start
from master.storage import schema
from master.storage.db import Database
from master.storage.migrations import MIGRATIONS, migrate
from rawp.clock import FakeClock, new_id


async def _columns(db: Database, table: str) -> set[str]:
    async with db.connect() as conn:
        return await conn.run_sync(lambda c: {col["name"] for col in inspect(c).get_columns(table)})


async def _tables(db: Database) -> set[str]:
    async with db.connect() as conn:
        return set(await conn.run_sync(lambda c: inspect(c).get_table_names()))


async def _fresh(database_url: str) -> Database:
    db = Database(database_url)
    async with db.begin() as conn:  # PostgreSQL is shared by the session: start from nothing
        await conn.run_sync(schema.metadata.drop_all)
        await conn.execute(text("DROP TABLE IF EXISTS schema_version"))
    return db


async def test_migration_2_upgrades_a_version_1_database(database_url):
    db = await _fresh(database_url)
    try:
        assert await migrate(db, MIGRATIONS[:1]) == [1]
        # Take the database back to what version 1 created.
        async with db.begin() as conn:
            await conn.execute(text("DROP TABLE usage_records"))
            await conn.execute(text("DROP TABLE edge_tickets"))
            await conn.execute(text("ALTER TABLE sessions DROP COLUMN last_activity_at"))
        assert "last_activity_at" not in await _columns(db, "sessions")

        assert await migrate(db, MIGRATIONS[:2]) == [2]
        assert {"usage_records", "edge_tickets"} <= await _tables(db)
        assert "last_activity_at" in await _columns(db, "sessions")
        assert await migrate(db, MIGRATIONS[:2]) == []  # nothing left to do
    finally:
        async with db.begin() as conn:
            await conn.run_sync(schema.metadata.drop_all)
            await conn.execute(text("DROP TABLE IF EXISTS schema_version"))
        await db.dispose()


def test_periods_are_calendar_periods_in_utc():
    wednesday = datetime(2026, 12, 2, 18, 30, tzinfo=UTC)
    assert period_start("today", wednesday) == datetime(2026, 12, 2, tzinfo=UTC)
    assert period_start("week", wednesday) == datetime(2026, 11, 30, tzinfo=UTC)  # Monday
    assert period_start("month", wednesday) == datetime(2026, 12, 1, tzinfo=UTC)


async def test_usage_sums_by_period_and_counts_each_frame_once(database_url):
    from master.storage import nodes as node_store

    db = await _fresh(database_url)
    clock = FakeClock(datetime(2026, 11, 29, 12, tzinfo=UTC))  # a Sunday
    try:
        await migrate(db)
        node_id, session_id, user = new_id(), new_id(), "discord:5"
        async with db.begin() as conn:
            await node_store.ensure_user(conn, user, clock.now())
            await conn.execute(
                schema.nodes.insert().values(
                    id=node_id, user_id=user, device_name="b", client_address="http://x:1",
                    status="active", paired_at=clock.now(),
                )
            )  # fmt: skip
            await conn.execute(
                schema.sessions.insert().values(
                    id=session_id, node_id=node_id, user_id=user, agent_name="demo",
                    status="RUNNING", pinned_limits={}, pinned_capabilities=[],
                    limits_version=1, capabilities_version=1,
                    created_at=clock.now(), updated_at=clock.now(),
                )
            )  # fmt: skip
        book = UsageBook(db, clock)
        ids = dict(message_id="", session_id=session_id, node_id=node_id, user_id=user)

        async def record(payload) -> bool:
            return await book.record_or_count(**{**ids, "message_id": new_id()}, payload=payload)

        assert await record({"input_tokens": 10, "output_tokens": 1, "cost_usd": 0.5})  # Sunday
        clock.advance(24 * 3600)  # Monday: a new week, same month
        assert await record({"input_tokens": 20, "tool_invocations": 3, "cost_usd": 0.25})
        clock.advance(2 * 24 * 3600)  # Wednesday, December: a new month
        again = new_id()
        twice = {**ids, "message_id": again, "payload": {"input_tokens": 40}}
        assert await book.record_or_count(**twice)
        assert not await book.record_or_count(**twice)  # the same frame again: kept once
        assert not await record({"input_tokens": -1})  # breaks the schema: not counted

        today = await book.aggregate(node_id, "today")
        week = await book.aggregate(node_id, "week")
        month = await book.aggregate(node_id, "month")
        assert today["total_input_tokens"] == 40
        assert week["total_input_tokens"] == 60 and week["total_tool_invocations"] == 3
        assert month["total_input_tokens"] == 40
        assert week["estimated_cost"] == 0.25  # Sunday's 0.5 belongs to the week before
    finally:
        async with db.begin() as conn:
            await conn.run_sync(schema.metadata.drop_all)
            await conn.execute(text("DROP TABLE IF EXISTS schema_version"))
        await db.dispose()
