"""Terminal sessions on the Edge API (issue 30 §2, master.edge.sessions.agent_sessions): the
owner's `GET /v1/edge/nodes/{id}/agent-sessions` asks the client and passes on only the listed
fields; another user's node is 404 and the client is never asked; `resume_conversation` goes to
the client's `session/init`, alone."""

from __future__ import annotations

ALICE, BOB = "discord:111", "slack:T9:U222"
LISTED = {
    "agent_name": "claude",
    "conversation_id": "dabaccdc-84d1-4d59-95ff-ee69f79ec527",
    "workspace_path": "/w/app",
    "title": "remember the word kestrel",
    "updated_at": "2026-12-05T05:44:41+00:00",
}


async def test_only_the_owner_lists_and_picks_up_terminal_conversations(edge_master, fake_client):
    node = (await edge_master.node(ALICE, fake_client.address))["node_id"]
    url = f"/v1/edge/nodes/{node}/agent-sessions"
    fake_client.agent_sessions = (200, {"conversations": [{**LISTED, "secret": "x"}]})
    status, body = await edge_master.call(ALICE, "GET", url + "?agent=claude")
    assert (status, body) == (200, {"conversations": [LISTED]})  # only the model's fields
    assert fake_client.calls[-1] == ("GET", "/v1/agent-sessions?agent=claude")

    fake_client.agent_sessions = (403, {"error_code": "AGENT_NOT_ALLOWED", "message": "no"})
    status, body = await edge_master.call(ALICE, "GET", url + "?agent=nobody")
    assert (status, body["error_code"]) == (403, "AGENT_NOT_ALLOWED")
    fake_client.agent_sessions = (200, {"conversations": [{"title": "no id"}]})
    status, body = await edge_master.call(ALICE, "GET", url)
    assert status == 502  # a wrong answer from the node is not passed on

    asked = len(fake_client.calls)
    await edge_master.node(BOB, fake_client.address)
    status, body = await edge_master.call(BOB, "GET", url)
    assert (status, body["error_code"]) == (404, "NODE_NOT_FOUND")
    picked = LISTED["conversation_id"]
    start = {"agent_name": "claude", "workspace_path": "/w", "resume_conversation": picked}
    status, body = await edge_master.call(BOB, "POST", f"/v1/edge/nodes/{node}/sessions", start)
    assert (status, body["error_code"]) == (404, "NODE_NOT_FOUND")
    assert len(fake_client.calls) == asked  # Bob reached nothing of Alice's

    sessions = f"/v1/edge/nodes/{node}/sessions"
    for wrong in ({"resume_conversation": "../etc"}, {"fork": True}):
        status, _ = await edge_master.call(ALICE, "POST", sessions, {**start, **wrong})
        assert status == 400
    status, _ = await edge_master.call(ALICE, "POST", sessions, start)
    assert status == 201
    sent = fake_client.init_bodies[-1]
    assert sent["resume_conversation"] == picked and "resume" not in sent
