"""A `session.usage` the database refuses is never dropped silently (issue 29 §4;
master.edge.usage.usage): it is tried again, and one that fails every try is logged as an error and
counted in `rawp_master_usage_unrecorded_total`. The edge gets the frame either way. The
database's refusal is real: the usage table is renamed away under the running master."""

from __future__ import annotations

import asyncio
import logging

from sqlalchemy import text

from master.storage import usage as usage_store
from tests.edge.test_budgets import _greeted, _recv, _session, _usage

AWAY = "ALTER TABLE usage_records RENAME TO usage_away"
BACK = "ALTER TABLE usage_away RENAME TO usage_records"


async def _sql(db, statement: str) -> None:
    async with db.begin() as conn:
        await conn.execute(text(statement))


def _unrecorded(edge_master) -> float:
    registry = edge_master.services.metrics.registry
    return registry.get_sample_value("rawp_master_usage_unrecorded_total")


async def _until(condition, what: str, limit: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + limit
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.01)


async def test_a_usage_write_refused_for_a_moment_is_recorded_once_the_database_answers(
    edge_master, fake_client, caplog
):
    caplog.set_level(logging.WARNING, logger="rawp.master.edge.usage")
    _, sid, ticket = await _session(edge_master, fake_client)
    db = edge_master.services.db
    async with edge_master.websocket(sid, ticket) as ws:
        await _greeted(ws)
        await _sql(db, AWAY)
        try:
            await fake_client.push(sid, _usage(sid, cost=0.25, tokens=(7, 3)))
            await _until(lambda: "recording usage failed, retrying" in caplog.text, "a retry")
        finally:
            await _sql(db, BACK)
        assert (await _recv(ws))["type"] == "session.usage"  # recorded, then forwarded
        async with db.connect() as conn:
            total = await usage_store.total_where(conn, session_id=sid)
        assert (total.input_tokens, total.output_tokens, total.cost_usd) == (7, 3, 0.25)
    assert _unrecorded(edge_master) == 0


async def test_a_usage_write_refused_every_try_is_logged_and_counted_and_still_forwarded(
    edge_master, fake_client, caplog
):
    caplog.set_level(logging.WARNING, logger="rawp.master.edge.usage")
    _, sid, ticket = await _session(edge_master, fake_client)
    db = edge_master.services.db
    async with edge_master.websocket(sid, ticket) as ws:
        await _greeted(ws)
        await _sql(db, AWAY)
        try:
            await fake_client.push(sid, _usage(sid, cost=0.25))
            assert (await _recv(ws))["type"] == "session.usage"  # the edge still gets it
        finally:
            await _sql(db, BACK)
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and "not recorded after 4 tries" in errors[0].getMessage()
    assert errors[0].exc_info is not None
    assert _unrecorded(edge_master) == 1
