"""Client links are owned (held_links rule 3, client_link rule 8): every link's loop is a child
of the session layer's TaskOwner, and a master that stops ends them all and leaves its RUNNING
sessions DETACHED for a later reattach (a transition, held_links rule 2). Real master app under
Quart's test client, fake client at the wire."""

from __future__ import annotations

import asyncio

from sqlalchemy import event, select

from master.storage import schema
from master.storage.db import Database

ALICE = "discord:79"


def _links() -> list[asyncio.Task]:
    return [t for t in asyncio.all_tasks() if t.get_name().startswith("client-link-")]


async def _sessions(master, fake_client, count: int) -> list[str]:
    """`count` sessions of ALICE's on one node; their ids."""
    node = await master.node(ALICE, fake_client.address)
    made = []
    for _ in range(count):
        status, body = await master.call(
            ALICE,
            "POST",
            f"/v1/edge/nodes/{node['node_id']}/sessions",
            {"agent_name": "demo", "workspace_path": "/w"},
        )
        assert status == 201, body
        made.append(body["session_id"])
    return made


async def test_stopping_the_master_ends_every_link_and_detaches_running_sessions(
    make_edge_master, fake_client, edge_settings
):
    async with make_edge_master() as master:
        made = await _sessions(master, fake_client, 3)
        assert len(_links()) == 3  # one loop per link, each a named child of the owner
        ended = made.pop()
        assert (await master.call(ALICE, "DELETE", f"/v1/edge/sessions/{ended}"))[0] == 204
        assert len(_links()) == 2
    assert _links() == []  # nothing outlives the master's session layer

    db = Database(edge_settings.database_address)
    try:
        async with db.connect() as conn:
            rows = await conn.execute(
                select(schema.sessions.c.id, schema.sessions.c.status).where(
                    schema.sessions.c.id.in_([*made, ended])
                )
            )
            states = dict(rows.all())
    finally:
        await db.dispose()
    assert states == {made[0]: "DETACHED", made[1]: "DETACHED", ended: "TERMINATED"}


async def test_a_stop_detaches_every_session_in_one_transaction(
    make_edge_master, fake_client, edge_settings
):
    """Issue 35: a master stopping with 10,000 sessions wrote one DETACH transaction each and
    had not exited 30 s after SIGTERM. The stop now writes them together: counted here on the
    master's own engine, the stop's transactions do not grow with the sessions."""
    commits: list[str] = []
    async with make_edge_master() as master:
        made = await _sessions(master, fake_client, 12)
        engine = master.services.db.engine.sync_engine
        event.listen(engine, "commit", lambda _conn: commits.append("commit"))
    assert 1 <= len(commits) <= 2  # the DETACH of all twelve, and the bookkeeping's last round
    db = Database(edge_settings.database_address)
    try:
        async with db.connect() as conn:
            rows = await conn.execute(
                select(schema.sessions.c.status).where(schema.sessions.c.id.in_(made))
            )
            assert [status for (status,) in rows] == ["DETACHED"] * len(made)
    finally:
        await db.dispose()
