"""TERMINATED is final (RAWP §5, issue 14 §5): a client link whose late state write is refused
lets the session go. The master runs under Quart's test client, the client is a fake at the
wire (tests/edge/fake_client.py); "another replica" is the database write another replica's
DELETE makes — `move_session(TERMINATE)` — without the relay message that would normally
follow it, so only the table stands between the late writer and a revived session."""

from __future__ import annotations

import asyncio

from sqlalchemy import select

from master.storage import schema
from master.storage.db import utc
from rawp.session_state import SessionEvent
from tests.edge.stack import frame

ALICE = "discord:78"


async def _session(edge_master, fake_client) -> str:
    node = await edge_master.node(ALICE, fake_client.address)
    status, made = await edge_master.call(
        ALICE,
        "POST",
        f"/v1/edge/nodes/{node['node_id']}/sessions",
        {"agent_name": "demo", "workspace_path": "/w"},
    )
    assert status == 201, made
    return made["session_id"]


async def _row(edge_master, session_id: str):
    async with edge_master.services.db.connect() as conn:
        query = select(schema.sessions).where(schema.sessions.c.id == session_id)
        return (await conn.execute(query)).one()


async def until(condition, what: str, limit: float = 10.0) -> None:
    """Wait for `condition()` to hold, checking often; fail after `limit` seconds."""
    deadline = asyncio.get_running_loop().time() + limit
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


async def _let_go(edge_master, session_id: str) -> None:
    sessions = edge_master.services.edge.sessions
    await until(lambda: session_id not in sessions.live, "the master to let the session go")


async def _ended_elsewhere(edge_master, session_id: str):
    move = await edge_master.services.config.move_session(session_id, SessionEvent.TERMINATE)
    assert move.moved
    return await _row(edge_master, session_id)


async def test_a_link_that_drops_after_another_replicas_delete_lets_go(edge_master, fake_client):
    sid = await _session(edge_master, fake_client)
    ended = await _ended_elsewhere(edge_master, sid)

    await fake_client.drop(sid)  # the link drops; its DETACH finds the row TERMINATED
    await _let_go(edge_master, sid)

    assert [body["reattach"] for body in fake_client.init_bodies] == [False]  # no reattach
    row = await _row(edge_master, sid)
    assert row.status == "TERMINATED"
    assert utc(row.updated_at) == utc(row.terminated_at) == utc(ended.terminated_at)
    assert await edge_master.call(ALICE, "GET", "/v1/edge/sessions") == (200, {"sessions": []})


async def test_a_reattach_that_finds_the_session_terminated_sends_nothing_and_lets_go(
    edge_master, fake_client
):
    sid = await _session(edge_master, fake_client)
    link = edge_master.services.edge.sessions.live[sid].link
    ended, sending = [], []

    async def end_it_now(session_id: str) -> None:  # while the master reattaches:
        # an edge frame waits for the new socket (client_link rule 5)…
        cancel = frame("control.prompt.cancel", {}, session_id)
        sending.append(asyncio.get_running_loop().create_task(link.send(cancel)))
        await asyncio.sleep(0)
        # …and another replica's DELETE ends the session.
        ended.append(await _ended_elsewhere(edge_master, session_id))

    fake_client.on_reattach = end_it_now
    await fake_client.drop(sid)  # DETACH is written; the reattach then races the DELETE
    await _let_go(edge_master, sid)

    assert [body["reattach"] for body in fake_client.init_bodies] == [False, True]
    # The queued frame was never sent, and its sender is told so (client_link rule 5).
    assert await asyncio.wait_for(sending[0], 5) is False
    assert fake_client.sessions[sid].received == []
    row = await _row(edge_master, sid)
    assert row.status == "TERMINATED"  # the ATTACH after the reattach was refused
    assert utc(row.updated_at) == utc(row.terminated_at) == utc(ended[0].terminated_at)
    sockets = fake_client.sessions[sid].sockets
    await until(lambda: sockets[-1].closed, "the master to close the socket it opened")
    assert await edge_master.call(ALICE, "GET", "/v1/edge/sessions") == (200, {"sessions": []})
