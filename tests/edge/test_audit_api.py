"""The approval audit's Edge API routes (issue 15 §4) under Quart's test client, on SQLite and
PostgreSQL: the gateway's reports are stored with the master's time and the session's node,
each user sees only their own, and another user's session or node is 404."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from rawp.clock import FakeClock, iso

ALICE, BOB = "discord:111", "slack:T9:U222"
STRANGER = "discord:666"


async def _session(master, fake_client, owner: str) -> tuple[str, str]:
    node = await master.node(owner, fake_client.address)
    status, made = await master.call(
        owner,
        "POST",
        f"/v1/edge/nodes/{node['node_id']}/sessions",
        {"agent_name": "demo", "workspace_path": "/work/space"},
    )
    assert status == 201, made
    return node["node_id"], made["session_id"]


def _report(outcome: str, **extra) -> dict:
    body = {
        "outcome": outcome,
        "platform": "discord",
        "interaction_id": "int-1",
        "tool_name": "Bash",
        "input_preview": "rm -rf build/",
    }
    if outcome != "expired":
        body.update(actor=STRANGER if outcome == "refused" else ALICE)
    if outcome == "answered":
        body.update(option_id="allow", option_label="Allow once")
    body.update(extra)
    return body


async def test_reports_are_stored_and_listed_for_their_owner_only(make_edge_master, fake_client):
    clock = FakeClock(datetime.now(UTC))  # near real time: pairing checks config times
    async with make_edge_master(clock=clock) as master:
        node_id, session_id = await _session(master, fake_client, ALICE)
        _, bob_session = await _session(master, fake_client, BOB)
        alice = await master.token(ALICE)
        path = f"/v1/edge/sessions/{session_id}/audit"
        stored = []
        for outcome in ("refused", "answered", "expired"):
            status, record = await master.call(alice, "POST", path, _report(outcome))
            assert status == 201, record
            stored.append(record)
            clock.advance(1)
        refused, answered, expired = stored
        assert refused["actor"] == STRANGER and refused["option_id"] is None
        assert answered["actor"] == ALICE and answered["option_label"] == "Allow once"
        assert expired["actor"] is None
        for record in stored:
            assert record["session_id"] == session_id and record["node_id"] == node_id
            assert record["user_id"] == ALICE and record["tool_name"] == "Bash"
        assert answered["recorded_at"] == iso(clock.now() - timedelta(seconds=2))

        status, bob_record = await master.call(
            BOB, "POST", f"/v1/edge/sessions/{bob_session}/audit", _report("expired")
        )
        assert status == 201

        status, listed = await master.call(alice, "GET", "/v1/edge/audit")
        assert status == 200
        assert [r["outcome"] for r in listed["records"]] == ["expired", "answered", "refused"]
        assert listed["records"][1] == answered
        status, by_node = await master.call(alice, "GET", f"/v1/edge/audit?node_id={node_id}")
        assert by_node == listed
        since = iso(clock.now() - timedelta(seconds=2))
        status, recent = await master.call(alice, "GET", f"/v1/edge/audit?since={since}")
        assert [r["outcome"] for r in recent["records"]] == ["expired", "answered"]
        status, one = await master.call(alice, "GET", "/v1/edge/audit?limit=1")
        assert [r["outcome"] for r in one["records"]] == ["expired"]

        # Bob sees his record only, never Alice's; her node is as unknown to him as a random id.
        status, bobs = await master.call(BOB, "GET", "/v1/edge/audit")
        assert bobs == {"records": [bob_record]}
        status, refused_node = await master.call(BOB, "GET", f"/v1/edge/audit?node_id={node_id}")
        assert (status, refused_node["error_code"]) == (404, "NODE_NOT_FOUND")
        status, foreign = await master.call(
            BOB, "POST", f"/v1/edge/sessions/{session_id}/audit", _report("expired")
        )
        assert (status, foreign["error_code"]) == (404, "SESSION_NOT_FOUND")
        status, after = await master.call(alice, "GET", "/v1/edge/audit")
        assert after == listed  # Bob's attempt left nothing in Alice's log


async def test_a_retried_report_is_one_record_and_previews_are_cut(edge_master, fake_client):
    _, session_id = await _session(edge_master, fake_client, ALICE)
    alice = await edge_master.token(ALICE)
    path = f"/v1/edge/sessions/{session_id}/audit"
    body = _report("answered", record_id="rec-1", input_preview="x" * 5000, detail="d" * 900)
    first = await edge_master.call(alice, "POST", path, body)
    second = await edge_master.call(alice, "POST", path, body)
    assert first[0] == second[0] == 201 and first[1] == second[1]
    assert len(first[1]["input_preview"]) == 200 and first[1]["input_preview"].endswith("…")
    assert len(first[1]["detail"]) == 200
    status, listed = await edge_master.call(alice, "GET", "/v1/edge/audit")
    assert len(listed["records"]) == 1
    # Bob cannot take over Alice's record id (nor learn what it holds).
    _, bob_session = await _session(edge_master, fake_client, BOB)
    status, taken = await edge_master.call(
        BOB, "POST", f"/v1/edge/sessions/{bob_session}/audit", body
    )
    assert (status, taken["error_code"]) == (400, "RECORD_ID_IN_USE")
    assert "x" * 10 not in str(taken)


async def test_an_ended_sessions_expiry_is_still_recorded(edge_master, fake_client):
    _, session_id = await _session(edge_master, fake_client, ALICE)
    alice = await edge_master.token(ALICE)
    assert (await edge_master.call(alice, "DELETE", f"/v1/edge/sessions/{session_id}"))[0] == 204
    status, record = await edge_master.call(
        alice, "POST", f"/v1/edge/sessions/{session_id}/audit", _report("expired")
    )
    assert status == 201 and record["outcome"] == "expired"


async def test_bad_reports_and_queries_are_400_and_no_token_is_401(edge_master, fake_client):
    _, session_id = await _session(edge_master, fake_client, ALICE)
    alice = await edge_master.token(ALICE)
    path = f"/v1/edge/sessions/{session_id}/audit"
    for body in (
        {**_report("answered"), "outcome": "maybe"},
        {k: v for k, v in _report("answered").items() if k != "actor"},  # who pressed?
        {**_report("refused"), "platform": ""},
        {**_report("refused"), "interaction_id": "i" * 201},
        {**_report("refused"), "tool_name": 7},
    ):
        status, answer = await edge_master.call(alice, "POST", path, body)
        assert (status, answer["error_code"]) == (400, "INVALID_REQUEST"), body
    for query, code in (
        ("since=yesterday", "INVALID_SINCE"),
        ("limit=0", "INVALID_LIMIT"),
        ("limit=1001", "INVALID_LIMIT"),
        ("limit=-3", "INVALID_LIMIT"),
    ):
        status, answer = await edge_master.call(alice, "GET", f"/v1/edge/audit?{query}")
        assert (status, answer["error_code"]) == (400, code), query
    status, listed = await edge_master.call(alice, "GET", "/v1/edge/audit")
    assert listed == {"records": []}
    for method, url in (("GET", "/v1/edge/audit"), ("POST", path)):
        response = await edge_master.client.open(url, method=method, json=_report("expired"))
        assert response.status_code == 401
