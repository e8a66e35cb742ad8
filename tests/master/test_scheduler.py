"""The scheduler of scheduled prompts (issue 30 §5, master/edge/sessions/scheduler.py) on SQLite
and PostgreSQL with a fake clock: a tick runs once when due and never before, a paused schedule
does not run, two replicas racing one tick run it once, missed ticks are counted once and
caught up once, a run that cannot start is recorded as missed, and migration 5 upgrades an
older database."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from sqlalchemy import insert, inspect, text

from master.edge.sessions.scheduler import RunResult, Scheduler
from master.storage import schedules as store
from master.storage import schema
from master.storage.db import Database
from master.storage.migrations import MIGRATIONS, head, migrate
from rawp.clock import FakeClock

MONDAY_8 = datetime(2026, 12, 7, 8, 0, tzinfo=UTC)  # a Monday
OWNER = "discord:1"


class Runs:
    """The scheduler's runner: records each run; a run can be told to fail to start."""

    def __init__(self, offline: bool = False, pause: float = 0.0) -> None:
        self.rows: list[str] = []
        self.offline = offline
        self.pause = pause

    async def __call__(self, row) -> RunResult:
        await asyncio.sleep(self.pause)
        self.rows.append(row.id)
        if self.offline:
            return RunResult(None, "missed: the node is offline")
        return RunResult(f"session-{len(self.rows)}", "ran")


async def _fresh(database_url: str) -> Database:
    db = Database(database_url)
    async with db.begin() as conn:
        await conn.run_sync(schema.metadata.drop_all)
        await conn.execute(text("DROP TABLE IF EXISTS schema_version"))
    await migrate(db)
    async with db.begin() as conn:
        await conn.execute(insert(schema.users).values(id=OWNER, created_at=MONDAY_8))
        await conn.execute(
            insert(schema.nodes).values(
                id="node-1",
                user_id=OWNER,
                device_name="box",
                client_address="https://box.example",
                status="active",
                paired_at=MONDAY_8,
            )
        )
    return db


async def _drop(db: Database) -> None:
    async with db.begin() as conn:
        await conn.run_sync(schema.metadata.drop_all)
        await conn.execute(text("DROP TABLE IF EXISTS schema_version"))
    await db.dispose()


async def _schedule(db: Database, cron: str = "0 9 * * 1-5", timezone: str = "UTC") -> str:
    made = store.NewSchedule(
        id="sched-1",
        user_id=OWNER,
        node_id="node-1",
        agent_name="demo",
        workspace_path="/work/space",
        prompt="summarise yesterday's commits",
        cron=cron,
        timezone=timezone,
        created_at=MONDAY_8,
    )
    async with db.begin() as conn:
        await store.add(conn, made)
    return made.id


async def _row(db: Database, schedule_id: str = "sched-1"):
    async with db.connect() as conn:
        return await store.user_schedule(conn, OWNER, schedule_id)


async def test_a_tick_runs_once_when_due_and_not_before(database_url):
    db = await _fresh(database_url)
    try:
        await _schedule(db)
        clock, runs = FakeClock(MONDAY_8), Runs()
        scheduler = Scheduler(db, clock, runs)
        clock.advance(59 * 60)  # 08:59: not due
        assert await scheduler.scan() == 0 and runs.rows == []
        clock.advance(61)  # 09:00:01
        assert await scheduler.scan() == 1 and runs.rows == ["sched-1"]
        assert await scheduler.scan() == 0  # the same tick again: already claimed
        row = await _row(db)
        assert (row.last_session_id, row.last_outcome, row.missed_runs) == ("session-1", "ran", 0)
        clock.advance(24 * 3600)  # Tuesday 09:00:01
        assert await scheduler.scan() == 1 and len(runs.rows) == 2
    finally:
        await _drop(db)


async def test_the_time_zone_decides_the_wall_clock(database_url):
    db = await _fresh(database_url)
    try:
        await _schedule(db, timezone="Europe/Berlin")  # 09:00 in Berlin is 08:00 UTC in winter
        clock, runs = FakeClock(MONDAY_8 + timedelta(minutes=1)), Runs()
        assert await Scheduler(db, clock, runs).scan() == 0  # 09:00 Berlin was at 08:00 UTC
        clock.advance(24 * 3600)
        assert await Scheduler(db, clock, runs).scan() == 1
    finally:
        await _drop(db)


async def test_a_paused_schedule_does_not_run_and_resumes_from_now(database_url):
    db = await _fresh(database_url)
    try:
        await _schedule(db)
        clock, runs = FakeClock(MONDAY_8), Runs()
        scheduler = Scheduler(db, clock, runs)
        async with db.begin() as conn:
            assert await store.set_paused(conn, OWNER, "sched-1", True, clock.now())
        clock.advance(3 * 24 * 3600)  # three weekday ticks fall while paused
        assert await scheduler.scan() == 0 and runs.rows == []
        async with db.begin() as conn:
            assert await store.set_paused(conn, OWNER, "sched-1", False, clock.now())
            assert not await store.set_paused(conn, "discord:2", "sched-1", True, clock.now())
        assert await scheduler.scan() == 0  # resumed at Thursday 08:00: nothing owed
        assert (await _row(db)).missed_runs == 0
        clock.advance(3600)
        assert await scheduler.scan() == 1
    finally:
        await _drop(db)


async def test_two_replicas_racing_one_tick_run_it_once(database_url):
    db = await _fresh(database_url)
    try:
        await _schedule(db)
        clock = FakeClock(MONDAY_8 + timedelta(hours=1, seconds=5))
        runs = Runs(pause=0.05)  # a run takes a while: both replicas have read the row
        first, second = Scheduler(db, clock, runs), Scheduler(db, clock, runs)
        started = await asyncio.gather(first.scan(), second.scan(), first.scan())
        assert sum(started) == 1 and runs.rows == ["sched-1"]
        # The claim itself: two replicas holding the same row, one UPDATE matches.
        clock.advance(24 * 3600)
        stale = await _row(db)
        tick = clock.now()
        async with db.begin() as conn:
            assert await store.claim(conn, stale, tick, 0)
        async with db.begin() as conn:
            assert not await store.claim(conn, stale, tick, 0)
    finally:
        await _drop(db)


async def test_missed_ticks_are_counted_once_and_caught_up_once(database_url):
    db = await _fresh(database_url)
    try:
        await _schedule(db)
        clock, runs = FakeClock(MONDAY_8), Runs()
        scheduler = Scheduler(db, clock, runs)
        clock.advance(3 * 24 * 3600 + 2 * 3600)  # Thursday 10:00: Mon, Tue, Wed, Thu fell
        assert await scheduler.scan() == 1 and runs.rows == ["sched-1"]  # one catch-up
        assert (await _row(db)).missed_runs == 3
        assert await scheduler.scan() == 0  # reported once, not piled up
        assert (await _row(db)).missed_runs == 3
    finally:
        await _drop(db)


async def test_a_run_that_cannot_start_is_recorded_as_missed(database_url):
    db = await _fresh(database_url)
    try:
        await _schedule(db)
        clock, runs = FakeClock(MONDAY_8 + timedelta(hours=1, seconds=1)), Runs(offline=True)
        scheduler = Scheduler(db, clock, runs)
        assert await scheduler.scan() == 0 and runs.rows == ["sched-1"]
        row = await _row(db)
        assert (row.missed_runs, row.last_outcome) == (1, "missed: the node is offline")
        assert await scheduler.scan() == 0 and len(runs.rows) == 1  # not retried
        runs.offline = False
        clock.advance(24 * 3600)
        assert await scheduler.scan() == 1
        row = await _row(db)
        assert (row.missed_runs, row.last_outcome) == (1, "ran")
    finally:
        await _drop(db)


async def test_migration_5_upgrades_a_version_4_database(database_url):
    db = Database(database_url)
    async with db.begin() as conn:
        await conn.run_sync(schema.metadata.drop_all)
        await conn.execute(text("DROP TABLE IF EXISTS schema_version"))
    try:
        assert await migrate(db, MIGRATIONS[:4]) == [1, 2, 3, 4]
        async with db.begin() as conn:  # back to what version 4 had
            await conn.execute(text("DROP TABLE schedules"))
        assert await migrate(db) == list(range(5, head() + 1))
        async with db.connect() as conn:
            assert await conn.run_sync(lambda c: inspect(c).has_table("schedules"))
        assert await migrate(db) == []
    finally:
        await _drop(db)
