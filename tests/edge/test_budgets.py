"""Budgets at the master (issue 16 §4; master.edge.usage.budgets) and the usage endpoint, at the
wire on both sides: the edge socket under Quart's test client, the client as a fake WebSocket server
on loopback. Usage is what the client reports (`session.usage`), recorded in the real database
(SQLite and PostgreSQL)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import orjson
from sqlalchemy import text

from master.services.budget_rules import BudgetLimits, BudgetRules
from master.storage import usage as usage_store
from rawp.clock import FakeClock, new_id
from tests.edge.stack import frame

ALICE = "discord:4242"
BOB = "discord:4343"


async def _session(edge_master, fake_client, user: str = ALICE, node: dict | None = None):
    node = node or await edge_master.node(user, fake_client.address)
    status, made = await edge_master.call(
        user,
        "POST",
        f"/v1/edge/nodes/{node['node_id']}/sessions",
        {"agent_name": "demo", "workspace_path": "/w"},
    )
    assert status == 201, made
    return node, made["session_id"], made["edge_ws_ticket"]


async def _recv(ws) -> dict:
    return orjson.loads(await asyncio.wait_for(ws.receive(), 10))


async def _greeted(ws) -> None:
    kinds = {(await _recv(ws))["type"], (await _recv(ws))["type"]}
    assert kinds == {"session.capabilities", "tool.catalog.publish"}


def _usage(session_id: str, *, cost: float = 0.0, tokens: tuple[int, int] = (0, 0)) -> str:
    payload = {"input_tokens": tokens[0], "output_tokens": tokens[1], "cost_usd": cost}
    return frame("session.usage", payload, session_id)


async def _report(ws, fake_client, session_id: str, text: str) -> None:
    """The client reports usage; once the edge has it, it is recorded (dataplane: recorded
    before forwarded)."""
    await fake_client.push(session_id, text)
    assert (await _recv(ws))["type"] == "session.usage"


async def _next_error(ws) -> dict:
    got = await _recv(ws)
    assert got["type"] == "session.error", got
    return got


async def _nothing_pending(ws, session_id: str) -> None:
    """Frames to one socket are offered in order: a bad frame's answer coming next proves that
    nothing (no warning) was queued before it."""
    await ws.send("not json")
    assert (await _next_error(ws))["payload"]["code"] == "INVALID_FRAME"


async def test_a_prompt_over_budget_is_refused_and_80_percent_warns_once(
    make_edge_master, fake_client
):
    clock = FakeClock(datetime(2026, 12, 3, 21, 0, tzinfo=UTC))
    rules = BudgetRules(default=BudgetLimits(cost_per_day=1.0))
    async with make_edge_master(clock=clock, budgets=rules) as edge_master:
        _, sid, ticket = await _session(edge_master, fake_client)
        async with edge_master.websocket(sid, ticket) as ws:
            await _greeted(ws)
            first = frame("control.prompt.request", {"prompt_text": "one"}, sid)
            await ws.send(first)
            await fake_client.wait_received(sid, 1)  # under 80 %: through, no notice
            await _nothing_pending(ws, sid)

            await _report(ws, fake_client, sid, _usage(sid, cost=0.85, tokens=(10, 5)))
            second = frame("control.prompt.request", {"prompt_text": "two"}, sid)
            await ws.send(second)
            warning = await _next_error(ws)
            assert warning["payload"]["code"] == "BUDGET_WARNING"
            assert "ref_message_id" not in warning["payload"]  # a notice, not a refusal
            message = warning["payload"]["message"]
            assert "80 % of your cost per day budget" in message
            assert "$0.8500 of $1.00" in message and "2026-12-04 00:00 UTC" in message
            assert warning["payload"]["budget"] == {
                "name": "cost_per_day",
                "scope": "user",
                "limit": 1.0,
                "spent": 0.85,
                "resets_at": "2026-12-04T00:00:00.000Z",
            }
            await fake_client.wait_received(sid, 2)  # the warned prompt went on

            third = frame("control.prompt.request", {"prompt_text": "three"}, sid)
            await ws.send(third)
            await fake_client.wait_received(sid, 3)
            await _nothing_pending(ws, sid)  # warned once: not again this day

            await _report(ws, fake_client, sid, _usage(sid, cost=0.2))
            over = frame("control.prompt.request", {"prompt_text": "four"}, sid)
            await ws.send(over)
            refusal = await _next_error(ws)
            payload = refusal["payload"]
            assert payload["code"] == "BUDGET_EXCEEDED"
            assert payload["ref_message_id"] == orjson.loads(over)["message_id"]
            assert payload["message"].startswith("Your cost per day budget ($1.00) is used up")
            assert "resets at 2026-12-04 00:00 UTC" in payload["message"]
            assert payload["budget"]["spent"] == 1.05
            await _nothing_pending(ws, sid)
            assert len(fake_client.sessions[sid].received) == 3  # the refused one never went

            # A new UTC day: the daily budget starts again. The refused frame was not taken, so
            # the very same frame (its message_id) may be sent again and goes through now.
            clock.advance(3 * 3600)
            await ws.send(over)
            received = await fake_client.wait_received(sid, 4)
            assert received[3] == over
            await _nothing_pending(ws, sid)


async def test_session_and_node_budgets_name_themselves(make_edge_master, fake_client):
    rules = BudgetRules(default=BudgetLimits(tokens_per_session=100))
    async with make_edge_master(budgets=rules) as edge_master:
        node, sid, ticket = await _session(edge_master, fake_client)
        async with edge_master.websocket(sid, ticket) as ws:
            await _greeted(ws)
            await _report(ws, fake_client, sid, _usage(sid, tokens=(60, 40)))
            await ws.send(frame("control.prompt.request", {"prompt_text": "more"}, sid))
            refusal = (await _next_error(ws))["payload"]
            assert refusal["code"] == "BUDGET_EXCEEDED"
            assert "tokens per session budget (100 tokens) is used up" in refusal["message"]
            assert "It resets with a new session." in refusal["message"]
            assert "resets_at" not in refusal["budget"]
        # A new session starts from nothing.
        _, fresh, ticket = await _session(edge_master, fake_client, node=node)
        async with edge_master.websocket(fresh, ticket) as ws:
            await _greeted(ws)
            await ws.send(frame("control.prompt.request", {"prompt_text": "hi"}, fresh))
            await fake_client.wait_received(fresh, 1)

    async with make_edge_master() as edge_master:
        node, sid, ticket = await _session(edge_master, fake_client)
        # A node's id is made at pairing: its rules are set once it is known.
        rules = BudgetRules(nodes={node["node_id"]: BudgetLimits(cost_per_month=2.0)})
        edge_master.services.edge.plane.budgets.rules = rules
        async with edge_master.websocket(sid, ticket) as ws:
            await _greeted(ws)
            await _report(ws, fake_client, sid, _usage(sid, cost=2.5))
            await ws.send(frame("control.prompt.request", {"prompt_text": "x"}, sid))
            refusal = (await _next_error(ws))["payload"]
        assert refusal["code"] == "BUDGET_EXCEEDED"
        device = f"box-of-{ALICE}"
        assert refusal["message"].startswith(f"Node {device}'s cost per month budget ($2.00)")
        assert refusal["budget"]["scope"] == "node"
        now = datetime.now(UTC)
        first = datetime(now.year + now.month // 12, now.month % 12 + 1, 1, tzinfo=UTC)
        assert f"resets at {first:%Y-%m-%d} 00:00 UTC" in refusal["message"]


async def test_without_budgets_nothing_is_checked(edge_master, fake_client):
    _, sid, ticket = await _session(edge_master, fake_client)
    async with edge_master.websocket(sid, ticket) as ws:
        await _greeted(ws)
        await _report(ws, fake_client, sid, _usage(sid, cost=10_000.0, tokens=(10**9, 10**9)))
        await ws.send(frame("control.prompt.request", {"prompt_text": "go"}, sid))
        await fake_client.wait_received(sid, 1)
        await _nothing_pending(ws, sid)


async def test_the_usage_endpoint_agrees_with_node_metrics(make_edge_master, fake_client):
    rules = BudgetRules(default=BudgetLimits(cost_per_day=5.0, tokens_per_session=1000))
    async with make_edge_master(budgets=rules) as edge_master:
        node, sid, ticket = await _session(edge_master, fake_client)
        _, other, other_ticket = await _session(edge_master, fake_client, node=node)
        async with edge_master.websocket(sid, ticket) as ws:
            await _greeted(ws)
            await _report(ws, fake_client, sid, _usage(sid, cost=0.5, tokens=(100, 20)))
            await _report(ws, fake_client, sid, _usage(sid, cost=0.25, tokens=(1, 2)))
        async with edge_master.websocket(other, other_ticket) as ws:
            await _greeted(ws)
            await _report(ws, fake_client, other, _usage(other, cost=1.0, tokens=(7, 7)))

        status, report = await edge_master.call(ALICE, "GET", f"/v1/edge/usage?session_id={sid}")
        assert status == 200, report
        assert report["session"]["usage"] == {
            "total_input_tokens": 101,
            "total_output_tokens": 22,
            "estimated_cost": 0.75,
            "total_tool_invocations": 0,
        }
        (mine,) = report["nodes"]
        for period in ("today", "month"):
            path = f"/v1/edge/nodes/{node['node_id']}/metrics?period={period}"
            status, metrics = await edge_master.call(ALICE, "GET", path)
            assert status == 200
            assert mine[period] == metrics["aggregated_usage"]
            assert report["total"][period] == metrics["aggregated_usage"]
        assert mine["today"]["estimated_cost"] == 1.75
        budgets = {b["name"]: b for b in report["budgets"]}
        assert budgets["cost_per_day"]["spent"] == 1.75
        assert budgets["tokens_per_session"]["spent"] == 123  # this session's only
        assert report["periods"]["today"]["resets_at"].endswith("T00:00:00.000Z")

        status, without = await edge_master.call(ALICE, "GET", "/v1/edge/usage")
        assert status == 200 and "session" not in without
        assert "tokens_per_session" not in {b["name"] for b in without["budgets"]}

        # Only one's own: another user's session is as unknown as a made-up one.
        for path in (f"/v1/edge/usage?session_id={sid}", f"/v1/edge/usage?session_id={new_id()}"):
            status, refused = await edge_master.call(BOB, "GET", path)
            assert status == 404 and refused["error_code"] == "SESSION_NOT_FOUND"
        status, bobs = await edge_master.call(BOB, "GET", "/v1/edge/usage")
        assert status == 200 and bobs["nodes"] == []
        assert bobs["total"]["today"]["estimated_cost"] == 0
        response = await edge_master.client.get("/v1/edge/usage")
        assert response.status_code == 401


async def test_a_warning_is_recorded_once_per_period(edge_master):
    db = edge_master.services.db
    now = datetime(2026, 12, 3, tzinfo=UTC)
    results = []
    for period in ("2026-12-03", "2026-12-03", "2026-12-04"):
        async with db.begin() as conn:
            results.append(
                await usage_store.first_warning(conn, "user:a", "cost_per_day", period, now)
            )
    assert results == [True, False, True]


async def test_migration_4_brings_an_older_database_to_the_budget_shape(database_url):
    from sqlalchemy import inspect, text

    from master.storage import schema
    from master.storage.migrations import MIGRATIONS, head, migrate
    from tests.edge.test_storage import _fresh, _tables

    db = await _fresh(database_url)
    try:
        assert await migrate(db, MIGRATIONS[:3]) == [1, 2, 3]
        async with db.begin() as conn:  # back to what version 3 created
            await conn.execute(text("DROP TABLE budget_warnings"))
            await conn.execute(text("DROP INDEX ix_usage_user_time"))
            await conn.execute(text("DROP INDEX ix_usage_session"))
        assert "budget_warnings" not in await _tables(db)
        assert await migrate(db, MIGRATIONS[:4]) == [4]
        assert "budget_warnings" in await _tables(db)
        async with db.connect() as conn:
            indexes = await conn.run_sync(
                lambda c: {i["name"] for i in inspect(c).get_indexes("usage_records")}
            )
        assert {"ix_usage_user_time", "ix_usage_session"} <= indexes
        assert await migrate(db) == list(range(5, head() + 1))  # the later ones, once
        assert await migrate(db) == []
    finally:
        async with db.begin() as conn:
            await conn.run_sync(schema.metadata.drop_all)
            await conn.execute(text("DROP TABLE IF EXISTS schema_version"))
        await db.dispose()


async def test_a_check_that_cannot_read_the_database_refuses_the_prompt(
    make_edge_master, fake_client
):
    """Rule 6 (issue 29 §4): budgets fail closed, with a clear error naming the prompt; the same
    prompt goes through once the database answers again."""
    rules = BudgetRules(default=BudgetLimits(cost_per_day=1.0))
    async with make_edge_master(budgets=rules) as edge_master:
        _, sid, ticket = await _session(edge_master, fake_client)
        db = edge_master.services.db
        async with edge_master.websocket(sid, ticket) as ws:
            await _greeted(ws)
            async with db.begin() as conn:  # the sums cannot be read: a real database error
                await conn.execute(text("ALTER TABLE usage_records RENAME TO usage_away"))
            prompt = frame("control.prompt.request", {"prompt_text": "go"}, sid)
            await ws.send(prompt)
            refusal = await _next_error(ws)
            payload = refusal["payload"]
            assert payload["code"] == "BUDGET_UNAVAILABLE"
            assert payload["ref_message_id"] == orjson.loads(prompt)["message_id"]
            assert refusal["parent_id"] == orjson.loads(prompt)["message_id"]
            assert "cannot be checked" in payload["message"]
            assert "usage_records" not in payload["message"]  # no database detail to the user
            await _nothing_pending(ws, sid)
            assert fake_client.sessions[sid].received == []  # never reached the client

            async with db.begin() as conn:
                await conn.execute(text("ALTER TABLE usage_away RENAME TO usage_records"))
            await ws.send(prompt)  # the very same frame: its message_id was released
            await fake_client.wait_received(sid, 1)
            await _nothing_pending(ws, sid)
