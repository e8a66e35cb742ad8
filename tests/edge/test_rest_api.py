"""The Edge REST API under Quart's test client, with a fake client at the wire: user tokens,
cross-user isolation on every route, filters, K-03 and bad input."""

from __future__ import annotations

import pytest

from rawp.clock import FakeClock
from runtime.rate_limit import Budget
from tests.edge.conftest import SECRET
from tests.master.conftest import GENEROUS_RATE

ALICE, BOB = "discord:111", "slack:T9:U222"


async def test_user_tokens_come_only_from_the_edge_secret(edge_master):
    post = edge_master.client.post
    ok = await post(
        "/v1/edge/auth/token",
        json={"subject": ALICE},
        headers={"Authorization": f"Bearer {SECRET}"},
    )
    body = await ok.get_json()
    assert ok.status_code == 200
    assert body["token_type"] == "Bearer" and body["expires_in"] == 900
    for headers, subject, status, code in (
        ({}, ALICE, 401, "TOKEN_MISSING"),
        ({"Authorization": "Bearer not-the-secret"}, ALICE, 401, "INVALID_TOKEN"),
        ({"Authorization": f"Bearer {SECRET}"}, "no colon", 400, "INVALID_SUBJECT"),
        ({"Authorization": f"Bearer {SECRET}"}, "oidc:someone", 400, "INVALID_SUBJECT"),
        ({"Authorization": f"Bearer {SECRET}"}, 7, 400, "INVALID_SUBJECT"),
    ):
        refused = await post("/v1/edge/auth/token", json={"subject": subject}, headers=headers)
        assert refused.status_code == status
        assert (await refused.get_json())["error_code"] == code


async def test_without_a_configured_secret_no_token_is_issued(make_edge_master):
    async with make_edge_master(secret=None) as master:
        response = await master.client.post(
            "/v1/edge/auth/token", json={"subject": ALICE}, headers={"Authorization": "Bearer x"}
        )
        assert response.status_code == 503
        assert (await response.get_json())["error_code"] == "EDGE_AUTH_NOT_CONFIGURED"


async def test_a_user_with_a_budget_of_their_own_is_not_held_to_the_default(make_edge_master):
    """The operator raises one user's Edge API budget (a load generator); the rest keep it."""
    tight = Budget(per_second=1 / 60, burst=2)  # also the token issue, per address
    async with make_edge_master(
        FakeClock(), user_budget=tight, user_rate_limits=(f"{BOB}={GENEROUS_RATE}",)
    ) as master:
        alice, bob = await master.token(ALICE), await master.token(BOB)
        assert [(await master.call(alice, "GET", "/v1/edge/nodes"))[0] for _ in range(3)] == [
            200,
            200,
            429,
        ]
        assert {(await master.call(bob, "GET", "/v1/edge/nodes"))[0] for _ in range(10)} == {200}


EDGE_ROUTES = [
    ("GET", "/v1/edge/nodes"),
    ("GET", "/v1/edge/nodes/{node}/metrics"),
    ("GET", "/v1/edge/nodes/{node}/config"),
    ("POST", "/v1/edge/nodes/{node}/sessions"),
    ("GET", "/v1/edge/sessions"),
    ("DELETE", "/v1/edge/sessions/{session}"),
    ("POST", "/v1/edge/sessions/{session}/tickets"),
    ("POST", "/v1/edge/pairing-urls"),
]


async def test_every_route_needs_a_user_token(edge_master, fake_client):
    node = await edge_master.node(ALICE, fake_client.address)
    node_token = node["access_token"]  # a node's token is not a user's (kind "node")
    for method, path in EDGE_ROUTES:
        url = path.format(node=node["node_id"], session="00000000-0000-4000-8000-000000000000")
        for token, code in ((None, "TOKEN_MISSING"), (node_token, "INVALID_TOKEN")):
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            response = await edge_master.client.open(url, method=method, headers=headers)
            assert response.status_code == 401, (method, url)
            assert (await response.get_json())["error_code"] == code


def test_an_expired_user_token_is_refused():
    from master.edge.access.auth import EdgeAuth
    from master.settings import EdgeSettings
    from rawp.errors import Unauthorized
    from rawp.tokens import SigningKey

    clock = FakeClock()
    auth = EdgeAuth(SigningKey.generate(), clock, EdgeSettings(secret=SECRET, user_token_ttl=60))
    token = auth.issue(f"Bearer {SECRET}", ALICE)["access_token"]
    import asyncio

    assert asyncio.run(auth.authenticate(f"Bearer {token}")).id == ALICE
    clock.advance(61)
    with pytest.raises(Unauthorized) as refused:
        asyncio.run(auth.authenticate(f"Bearer {token}"))
    assert refused.value.error_code == "TOKEN_EXPIRED"


async def _alice_with_a_session(edge_master, fake_client) -> tuple[dict, str]:
    node = await edge_master.node(ALICE, fake_client.address)
    status, made = await edge_master.call(
        ALICE,
        "POST",
        f"/v1/edge/nodes/{node['node_id']}/sessions",
        {"agent_name": "demo", "workspace_path": "/work/space"},
    )
    assert status == 201, made
    return node, made["session_id"]


async def test_another_users_nodes_and_sessions_are_404_on_every_route(edge_master, fake_client):
    node, session_id = await _alice_with_a_session(edge_master, fake_client)
    node_id = node["node_id"]
    bob = await edge_master.token(BOB)
    calls_before = list(fake_client.calls)

    assert await edge_master.call(bob, "GET", "/v1/edge/nodes") == (200, {"nodes": []})
    assert await edge_master.call(bob, "GET", "/v1/edge/sessions") == (200, {"sessions": []})
    for method, path, body in (
        ("GET", f"/v1/edge/nodes/{node_id}/metrics", None),
        ("GET", f"/v1/edge/nodes/{node_id}/config", None),
        ("POST", f"/v1/edge/nodes/{node_id}/sessions", {"agent_name": "demo"}),
        ("GET", f"/v1/edge/sessions?node_id={node_id}", None),
        ("DELETE", f"/v1/edge/sessions/{session_id}", None),
        ("POST", f"/v1/edge/sessions/{session_id}/tickets", None),
    ):
        status, answer = await edge_master.call(bob, method, path, body)
        assert status == 404, (method, path, answer)
        assert set(answer) == {"error_code", "message"}
        assert node_id not in str(answer.get("device_name", ""))
    assert fake_client.calls == calls_before  # nothing of Bob's reached Alice's machine

    # The same routes work for Alice, so the 404s above are about ownership.
    alice = await edge_master.token(ALICE)
    assert (await edge_master.call(alice, "GET", f"/v1/edge/nodes/{node_id}/config"))[0] == 200
    assert (await edge_master.call(alice, "GET", f"/v1/edge/nodes/{node_id}/metrics"))[0] == 200
    status, ticket = await edge_master.call(
        alice, "POST", f"/v1/edge/sessions/{session_id}/tickets"
    )
    assert status == 201 and ticket["edge_ws_ticket"]
    # Alice's ticket does not let Bob's pairing URL or session list see her data either.
    status, pairing = await edge_master.call(bob, "POST", "/v1/edge/pairing-urls")
    assert status == 201 and pairing["pairing_url"].startswith("https://master.example/")
    assert (await edge_master.call(alice, "DELETE", f"/v1/edge/sessions/{session_id}"))[0] == 204


async def test_no_session_init_before_both_scopes_are_synced(edge_master, fake_client):
    node = await edge_master.node(ALICE, fake_client.address, synced=False)
    status, answer = await edge_master.call(
        ALICE,
        "POST",
        f"/v1/edge/nodes/{node['node_id']}/sessions",
        {"agent_name": "demo", "workspace_path": "/w"},
    )
    assert status == 503 and answer["error_code"] == "CONFIG_NOT_SYNCED"  # K-03
    assert fake_client.calls == []  # the client was never called
    status, answer = await edge_master.call(
        ALICE, "GET", f"/v1/edge/nodes/{node['node_id']}/config"
    )
    assert status == 503 and answer["error_code"] == "CONFIG_NOT_SYNCED"


async def test_session_creation_answers_and_refusals(edge_master, fake_client):
    node = await edge_master.node(ALICE, fake_client.address)
    url = f"/v1/edge/nodes/{node['node_id']}/sessions"
    status, made = await edge_master.call(
        ALICE, "POST", url, {"agent_name": "demo", "workspace_path": "/w"}
    )
    assert status == 201
    assert made["status"] == "RUNNING"
    assert made["pinned_config_versions"] == {"limits": 1, "capabilities": 1}
    init = fake_client.init_bodies[-1]
    assert init["session_id"] == made["session_id"] and init["reattach"] is False
    assert init["workspace_path"] == "/w" and init["agent_name"] == "demo"

    # no workspace_path and no default advertised by the node → a clear 400.
    status, answer = await edge_master.call(ALICE, "POST", url, {"agent_name": "demo"})
    assert status == 400 and answer["error_code"] == "WORKSPACE_PATH_REQUIRED"
    fake_client.default_workspace = "/home/me/project"
    status, made = await edge_master.call(ALICE, "POST", url, {"agent_name": "demo"})
    assert status == 201 and fake_client.init_bodies[-1]["workspace_path"] == "/home/me/project"

    # The client's own refusal reaches the edge with its status and code.
    fake_client.init_refusal = (403, "AGENT_NOT_ALLOWED")
    status, answer = await edge_master.call(
        ALICE, "POST", url, {"agent_name": "rm", "workspace_path": "/w"}
    )
    assert status == 403 and answer["error_code"] == "AGENT_NOT_ALLOWED"

    for body, code in (({}, "INVALID_REQUEST"), ({"agent_name": 5}, "INVALID_REQUEST")):
        status, answer = await edge_master.call(ALICE, "POST", url, body)
        assert status == 400 and answer["error_code"] == code
    token = await edge_master.token(ALICE)
    response = await edge_master.client.post(
        url, data=b"{not json", headers={"Authorization": f"Bearer {token}"}
    )
    assert response.status_code == 400
    assert (await response.get_json())["error_code"] == "INVALID_JSON"


async def test_session_list_filters(edge_master, fake_client):
    node, first = await _alice_with_a_session(edge_master, fake_client)
    status, second = await edge_master.call(
        ALICE,
        "POST",
        f"/v1/edge/nodes/{node['node_id']}/sessions",
        {"agent_name": "demo", "workspace_path": "/w"},
    )
    assert (await edge_master.call(ALICE, "DELETE", f"/v1/edge/sessions/{first}"))[0] == 204

    status, listed = await edge_master.call(ALICE, "GET", "/v1/edge/sessions")
    assert status == 200
    assert [s["session_id"] for s in listed["sessions"]] == [second["session_id"]]
    row = listed["sessions"][0]
    assert set(row) == {
        "session_id", "node_id", "agent_name", "status", "created_at", "last_activity_at",
        "pinned_config_versions",
    }  # fmt: skip
    assert (await edge_master.call(ALICE, "GET", "/v1/edge/sessions?status=RUNNING"))[1] == listed
    status, none = await edge_master.call(ALICE, "GET", "/v1/edge/sessions?status=DETACHED")
    assert none == {"sessions": []}
    for bad in ("TERMINATED", "running", "ANY"):
        status, answer = await edge_master.call(ALICE, "GET", f"/v1/edge/sessions?status={bad}")
        assert status == 400 and answer["error_code"] == "INVALID_STATUS"
    status, by_node = await edge_master.call(
        ALICE, "GET", f"/v1/edge/sessions?node_id={node['node_id']}"
    )
    assert by_node == listed
    # A terminated session is gone for every route: DELETE and tickets answer 404.
    assert (await edge_master.call(ALICE, "DELETE", f"/v1/edge/sessions/{first}"))[0] == 404
    assert (await edge_master.call(ALICE, "POST", f"/v1/edge/sessions/{first}/tickets"))[0] == 404


async def test_nodes_and_metrics(edge_master, fake_client):
    node = await edge_master.node(ALICE, fake_client.address)
    status, listed = await edge_master.call(ALICE, "GET", "/v1/edge/nodes")
    (shown,) = listed["nodes"]
    assert shown["node_id"] == node["node_id"] and shown["device_name"] == f"box-of-{ALICE}"
    assert shown["status"] == "online" and shown["active_sessions_count"] == 0
    assert shown["capabilities"] == ["vision_v1"]
    assert shown["config_versions"] == {"limits": 1, "capabilities": 1}

    base = f"/v1/edge/nodes/{node['node_id']}/metrics"
    status, metrics = await edge_master.call(ALICE, "GET", base)
    assert status == 200 and metrics["period"] == "today"
    assert metrics["aggregated_usage"] == {
        "total_input_tokens": 0,
        "total_output_tokens": 0,
        "estimated_cost": 0.0,
        "total_tool_invocations": 0,
    }
    assert metrics["health"]["uptime_seconds"] == 42
    status, answer = await edge_master.call(ALICE, "GET", base + "?period=year")
    assert status == 400 and answer["error_code"] == "INVALID_PERIOD"

    await fake_client.close()  # the machine is gone: offline (K-09)
    status, listed = await edge_master.call(ALICE, "GET", "/v1/edge/nodes")
    assert listed["nodes"][0]["status"] == "offline"


async def test_expired_tickets_are_swept_at_most_once_a_minute(make_edge_master, fake_client):
    """Issuing a ticket deletes those expired for an hour, but reads the table at most once a
    minute (master.edge.access.tickets: a sweep per issue made opening N sessions O(N²))."""
    from datetime import UTC, datetime

    from sqlalchemy import func, select

    from master.storage.schema import edge_tickets

    clock = FakeClock(datetime.now(UTC))  # the node's config is stamped with the real time
    async with make_edge_master(clock) as master:
        _, session_id = await _alice_with_a_session(master, fake_client)  # ticket A, a sweep
        ttl = master.services.settings.edge.ticket_ttl

        async def issue_and_count(after: float) -> int:
            clock.advance(after)
            path = f"/v1/edge/sessions/{session_id}/tickets"
            assert (await master.call(ALICE, "POST", path))[0] == 201
            async with master.services.db.connect() as conn:
                return (await conn.execute(select(func.count()).select_from(edge_tickets))).scalar()

        # B sweeps (A is not an hour past its expiry yet); C comes 30 s later, A is old by then
        # but no sweep runs; D, a minute after B's sweep, deletes A.
        assert await issue_and_count(3580 + ttl) == 2
        assert await issue_and_count(30) == 3
        assert await issue_and_count(30) == 3
