"""The relay's bookkeeping is written in rounds (issue 35 §3, master.edge.usage.bookkeeping):
every session's `last_activity_at` and every usage record go through one writer, one
transaction a round, whatever the number of sessions. The transactions are counted on the
real database's engine (SQLite and PostgreSQL)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from sqlalchemy import event, func, select, text

from master.edge.usage.bookkeeping import Bookkeeper
from master.storage import nodes as node_store
from master.storage import schema
from master.storage import usage as usage_store
from master.storage.db import Database, utc
from master.storage.migrations import migrate
from rawp.clock import FakeClock, new_id
from tests.gateway.support import eventually

SESSIONS = 1_000
USAGE_FRAMES = 300


class Commits:
    """Transactions committed on the engine, counted where SQLAlchemy commits them."""

    def __init__(self, db: Database) -> None:
        self.count = 0
        event.listen(db.engine.sync_engine, "commit", self._one)

    def _one(self, _conn) -> None:
        self.count += 1


@pytest.fixture
async def db(database_url):
    db = Database(database_url)
    async with db.begin() as conn:  # PostgreSQL is shared: start from nothing
        await conn.run_sync(schema.metadata.drop_all)
        await conn.execute(text("DROP TABLE IF EXISTS schema_version"))
    await migrate(db)
    yield db
    async with db.begin() as conn:
        await conn.run_sync(schema.metadata.drop_all)
        await conn.execute(text("DROP TABLE IF EXISTS schema_version"))
    await db.dispose()


async def _sessions(db: Database, clock: FakeClock, n: int) -> tuple[str, list[str]]:
    node_id, user = new_id(), "discord:5"
    ids = [new_id() for _ in range(n)]
    async with db.begin() as conn:
        await node_store.ensure_user(conn, user, clock.now())
        await conn.execute(
            schema.nodes.insert().values(
                id=node_id, user_id=user, device_name="b", client_address="http://x:1",
                status="active", paired_at=clock.now(),
            )
        )  # fmt: skip
        common = dict(
            node_id=node_id, user_id=user, agent_name="demo", status="RUNNING",
            pinned_limits={}, pinned_capabilities=[], limits_version=1,
            capabilities_version=1, created_at=clock.now(), updated_at=clock.now(),
        )  # fmt: skip
        await conn.execute(schema.sessions.insert(), [{"id": sid, **common} for sid in ids])
    return node_id, ids


def _row(node_id: str, session_id: str, clock: FakeClock) -> usage_store.UsageRow:
    return usage_store.UsageRow(
        message_id=new_id(), session_id=session_id, node_id=node_id, user_id="discord:5",
        recorded_at=clock.now(), input_tokens=3, output_tokens=1, tool_invocations=0,
        cost_usd=0.0,
    )  # fmt: skip


async def _touched(db: Database) -> int:
    async with db.connect() as conn:
        where = schema.sessions.c.last_activity_at.is_not(None)
        query = select(func.count()).select_from(schema.sessions).where(where)
        return (await conn.execute(query)).scalar_one()


async def _recorded(db: Database) -> int:
    async with db.connect() as conn:
        query = select(func.count()).select_from(schema.usage_records)
        return (await conn.execute(query)).scalar_one()


async def test_a_thousand_sessions_activity_and_usage_cost_a_few_transactions_not_one_each(db):
    clock = FakeClock(datetime(2026, 12, 5, 9, tzinfo=UTC))
    node_id, ids = await _sessions(db, clock, SESSIONS)
    commits = Commits(db)
    book = Bookkeeper(db, clock, interval=0.3)
    await book.start()
    try:
        for sid in ids:
            book.touch(sid)
        results = await asyncio.gather(
            *(book.usage(_row(node_id, ids[n], clock)) for n in range(USAGE_FRAMES))
        )
        assert results == [True] * USAGE_FRAMES  # each recorded, and known so when it returns
        assert await _recorded(db) == USAGE_FRAMES
        usage_commits = commits.count
        assert 1 <= usage_commits <= 3, f"{usage_commits} transactions for {USAGE_FRAMES} rows"

        async def all_touched() -> bool:
            return await _touched(db) == SESSIONS

        await eventually(all_touched, "the activity round")
        # The rows are visible to this reader as soon as SQLite commits, a moment before the
        # writer resumes to count its round: wait for the count, not for time.
        await eventually(lambda: book.rounds == commits.count, "the round counted")
        # Every session's mark went in one round: one transaction for all of them (or none of
        # its own, when the round was due while the usage rows were written and took both).
        assert commits.count - usage_commits <= 1 and commits.count <= 4
    finally:
        await book.close()


async def test_a_stop_writes_the_marks_and_rows_still_waiting(db):
    clock = FakeClock(datetime(2026, 12, 5, 9, tzinfo=UTC))
    node_id, ids = await _sessions(db, clock, 20)
    book = Bookkeeper(db, clock, interval=3600)  # no round would come for an hour
    await book.start()
    for sid in ids:
        book.touch(sid)
    await book.close()
    assert await _touched(db) == 20
    # After the stop a frame is still recorded, in a round of its own.
    assert await book.usage(_row(node_id, ids[0], clock)) is True
    assert await _recorded(db) == 1


async def test_a_row_recorded_before_is_reported_so_and_kept_once(db):
    clock = FakeClock(datetime(2026, 12, 5, 9, tzinfo=UTC))
    node_id, ids = await _sessions(db, clock, 1)
    book = Bookkeeper(db, clock)
    await book.start()
    try:
        row = _row(node_id, ids[0], clock)
        first, again = await asyncio.gather(book.usage(row), book.usage(row))
        assert (first, again) == (True, False)  # one round: the second is a repeat
        assert await _recorded(db) == 1
    finally:
        await book.close()


async def test_each_session_keeps_its_own_mark_to_the_second(db):
    """A round writes the marks grouped by second (master.storage.edge_sessions): each session
    gets the second of its own latest mark, not the round's, and none is left out."""
    clock = FakeClock(datetime(2026, 12, 5, 9, tzinfo=UTC))
    _, ids = await _sessions(db, clock, 1_203)  # more than two statements' worth in a second
    book = Bookkeeper(db, clock, interval=3600)
    await book.start()
    expected = {}
    for n, sid in enumerate(ids):
        if n % 400 == 0:
            clock.advance(0.75)  # marks fall in several seconds, some in the same one
        book.touch(sid)
        expected[sid] = clock.now().replace(microsecond=0)
    book.touch(ids[0])  # a later mark of the same session wins
    expected[ids[0]] = clock.now().replace(microsecond=0)
    await book.close()
    async with db.connect() as conn:
        query = select(schema.sessions.c.id, schema.sessions.c.last_activity_at)
        stored = {sid: utc(at) for sid, at in await conn.execute(query)}
    assert stored == expected
    assert len(set(expected.values())) >= 3
