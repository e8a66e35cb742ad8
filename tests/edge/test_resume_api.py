"""Resume on the Edge API's session create (issue 30 §2, master.edge.sessions.sessions rule 5):
only the caller's own earlier session, on the same node with the same agent, is passed on to
the client's `session/init` as `resume`."""

from __future__ import annotations

ALICE, BOB = "discord:111", "slack:T9:U222"


async def test_resume_is_passed_on_only_for_the_callers_session_node_and_agent(
    edge_master, fake_client
):
    node = await edge_master.node(ALICE, fake_client.address)
    url = f"/v1/edge/nodes/{node['node_id']}/sessions"
    body = {"agent_name": "demo", "workspace_path": "/w"}
    status, first = await edge_master.call(ALICE, "POST", url, body)
    assert status == 201
    assert "resume" not in fake_client.init_bodies[-1]  # sent only when resuming

    status, _ = await edge_master.call(ALICE, "POST", url, {**body, "resume": first["session_id"]})
    assert status == 201
    assert fake_client.init_bodies[-1]["resume"] == first["session_id"]
    assert "fork" not in fake_client.init_bodies[-1]
    forked = {**body, "resume": first["session_id"], "fork": True}
    status, _ = await edge_master.call(ALICE, "POST", url, forked)
    assert status == 201 and fake_client.init_bodies[-1]["fork"] is True

    sent = len(fake_client.init_bodies)
    other = {**body, "agent_name": "other", "resume": first["session_id"]}
    status, answer = await edge_master.call(ALICE, "POST", url, other)
    assert status == 409 and answer["error_code"] == "RESUME_MISMATCH"
    status, answer = await edge_master.call(ALICE, "POST", url, {**body, "resume": "nope"})
    assert status == 400
    status, answer = await edge_master.call(ALICE, "POST", url, {**body, "fork": True})
    assert status == 400  # fork names the session to copy
    bob_node = await edge_master.node(BOB, fake_client.address)
    bob_url = f"/v1/edge/nodes/{bob_node['node_id']}/sessions"
    status, answer = await edge_master.call(
        BOB, "POST", bob_url, {**body, "resume": first["session_id"]}
    )
    assert status == 404 and answer["error_code"] == "SESSION_NOT_FOUND"  # not Bob's
    assert len(fake_client.init_bodies) == sent  # none of these reached the client
