"""Session states move only along the table (RAWP §5, issue 14 §5), on SQLite and PostgreSQL.

`master.storage.config.move_session` is a conditional UPDATE: these tests put a row in every
state, apply every event, and check that the row moved exactly where `rawp.session_state`
allows it and stayed put elsewhere — TERMINATED above all, whoever writes after it.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import delete, select

from master.storage import config as store
from master.storage import nodes as node_store
from master.storage import schema
from master.storage.db import Database, utc
from master.storage.migrations import migrate
from rawp.clock import new_id
from rawp.session_state import SessionEvent, SessionState, can, next_state

S, E = SessionState, SessionEvent
T0 = datetime(2026, 12, 3, 8, tzinfo=UTC)


@pytest.fixture
async def db(database_url):
    made = Database(database_url)
    made.test_nodes = []  # deleted after the test, with their sessions
    await migrate(made)  # PostgreSQL is shared by the test session: fresh ids keep rows apart
    yield made
    # A later test's master would try to reattach the live rows left here.
    async with made.begin() as conn:
        users = select(schema.nodes.c.user_id).where(schema.nodes.c.id.in_(made.test_nodes))
        users = list((await conn.execute(users)).scalars())
        await conn.execute(
            delete(schema.sessions).where(schema.sessions.c.node_id.in_(made.test_nodes))
        )
        await conn.execute(delete(schema.nodes).where(schema.nodes.c.id.in_(made.test_nodes)))
        await conn.execute(delete(schema.users).where(schema.users.c.id.in_(users)))
    await made.dispose()


async def _node(db: Database) -> str:
    node_id, user = new_id(), f"discord:{new_id()}"
    db.test_nodes.append(node_id)
    async with db.begin() as conn:
        await node_store.ensure_user(conn, user, T0)
        await conn.execute(
            schema.nodes.insert().values(
                id=node_id, user_id=user, device_name="box", client_address="http://x:1",
                status="active", paired_at=T0,
            )
        )  # fmt: skip
    return node_id


async def _session(db: Database, node_id: str, state: SessionState) -> str:
    """A session row put straight into `state` (test setup: the code under test never does)."""
    session_id = new_id()
    async with db.begin() as conn:
        user = await conn.scalar(select(schema.nodes.c.user_id).where(schema.nodes.c.id == node_id))
        await conn.execute(
            schema.sessions.insert().values(
                id=session_id, node_id=node_id, user_id=user, agent_name="demo",
                status=state.value, pinned_limits={}, pinned_capabilities=[],
                limits_version=1, capabilities_version=1, created_at=T0, updated_at=T0,
                terminated_at=T0 if state is S.TERMINATED else None,
            )
        )  # fmt: skip
    return session_id


async def _row(db: Database, session_id: str):
    async with db.connect() as conn:
        return (
            await conn.execute(select(schema.sessions).where(schema.sessions.c.id == session_id))
        ).one()


async def _move(db: Database, session_id: str, event: SessionEvent, now=T0 + timedelta(hours=1)):
    async with db.begin() as conn:
        return await store.move_session(conn, session_id, event, now)


async def test_every_event_moves_a_row_exactly_as_the_table_says(db):
    node_id = await _node(db)
    for state in S:
        for event in E:
            session_id = await _session(db, node_id, state)
            move = await _move(db, session_id, event)
            row = await _row(db, session_id)
            if can(state, event):
                after = next_state(state, event)
                assert (move.moved, move.state, row.status) == (True, after, after.value)
                assert utc(row.updated_at) == T0 + timedelta(hours=1)
            else:  # refused: the row is untouched and the caller is told what it holds
                assert (move.moved, move.state, row.status) == (False, state, state.value)
                assert utc(row.updated_at) == T0
            assert move.ended == (row.status == S.TERMINATED.value)


async def test_nothing_written_after_terminate_changes_the_session(db):
    session_id = await _session(db, await _node(db), S.RUNNING)
    ended = await _move(db, session_id, E.TERMINATE, now=T0 + timedelta(minutes=1))
    assert ended.moved and ended.ended
    for event in (E.DETACH, E.ATTACH, E.TERMINATE, E.ATTACH):  # late writers, any replica
        late = await _move(db, session_id, event, now=T0 + timedelta(minutes=5))
        assert (late.moved, late.state, late.ended) == (False, S.TERMINATED, True)
    row = await _row(db, session_id)
    assert row.status == S.TERMINATED.value
    assert utc(row.terminated_at) == utc(row.updated_at) == T0 + timedelta(minutes=1)


async def test_an_unknown_session_is_refused_and_counts_as_ended(db):
    move = await _move(db, new_id(), E.ATTACH)
    assert (move.moved, move.state, move.ended) == (False, None, True)


async def test_shutdown_detach_leaves_init_and_terminated_rows_alone(db):
    node_id = await _node(db)
    rows = {state: await _session(db, node_id, state) for state in S}
    for session_id in rows.values():
        await _move(db, session_id, E.DETACH)
    assert {state: (await _row(db, sid)).status for state, sid in rows.items()} == {
        S.INIT: "INIT",
        S.RUNNING: "DETACHED",
        S.DETACHED: "DETACHED",
        S.TERMINATED: "TERMINATED",
    }


async def test_many_sessions_move_at_once_each_only_as_its_state_allows(db):
    """`move_sessions` (a master stopping with thousands of sessions): chunked statements, the
    same rule as one `move_session` per row."""
    node_id = await _node(db)
    running = [await _session(db, node_id, S.RUNNING) for _ in range(store.MOVE_CHUNK + 7)]
    others = {state: await _session(db, node_id, state) for state in (S.INIT, S.TERMINATED)}
    async with db.begin() as conn:
        moved = await store.move_sessions(
            conn, [*running, *others.values(), new_id()], E.DETACH, T0 + timedelta(hours=1)
        )
    assert moved == len(running)
    assert {(await _row(db, sid)).status for sid in running} == {"DETACHED"}
    assert (await _row(db, others[S.INIT])).status == "INIT"
    assert (await _row(db, others[S.TERMINATED])).status == "TERMINATED"


async def test_unregistering_a_node_ends_what_may_end_and_keeps_old_terminations(db):
    node_id, other = await _node(db), await _node(db)
    rows = {state: await _session(db, node_id, state) for state in S}
    elsewhere = await _session(db, other, S.RUNNING)
    async with db.begin() as conn:
        ended = await store.terminate_node_sessions(conn, node_id, T0 + timedelta(hours=2))
    assert ended == 3  # INIT, RUNNING, DETACHED
    for state, session_id in rows.items():
        row = await _row(db, session_id)
        assert row.status == "TERMINATED"
        when = T0 if state is S.TERMINATED else T0 + timedelta(hours=2)
        assert utc(row.terminated_at) == when  # the first termination's time is kept
    assert (await _row(db, elsewhere)).status == "RUNNING"


async def test_concurrent_writers_on_separate_connections_agree_with_the_table(db):
    """Replicas racing on one row, as close as one process gets: each write in its own
    connection and transaction, all started together. Whatever order the database picks,
    the row ends TERMINATED and exactly one TERMINATE moved it."""
    node_id = await _node(db)
    for trial in range(20):
        session_id = await _session(db, node_id, S.RUNNING)
        events = [E.DETACH, E.TERMINATE, E.ATTACH, E.DETACH, E.TERMINATE, E.ATTACH]
        moves = await asyncio.gather(*(_move(db, session_id, event) for event in events))
        assert (await _row(db, session_id)).status == "TERMINATED", trial
        moved = [event for event, move in zip(events, moves, strict=True) if move.moved]
        assert moved.count(E.TERMINATE) == 1, (trial, moved)
