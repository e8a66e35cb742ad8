"""The edge WebSocket's rules, at the wire on both sides: the edge socket under Quart's test
client, the client as a fake WebSocket server on loopback (tests/edge/fake_client.py)."""

from __future__ import annotations

import asyncio

import orjson
import pytest
from quart.testing import WebsocketResponseError

from rawp.clock import new_id
from tests.edge.stack import frame

ALICE = "discord:77"


async def _session(edge_master, fake_client) -> tuple[str, str, str]:
    node = await edge_master.node(ALICE, fake_client.address)
    status, made = await edge_master.call(
        ALICE,
        "POST",
        f"/v1/edge/nodes/{node['node_id']}/sessions",
        {"agent_name": "demo", "workspace_path": "/w"},
    )
    assert status == 201, made
    return node["node_id"], made["session_id"], made["edge_ws_ticket"]


async def _ticket(edge_master, session_id: str) -> str:
    status, body = await edge_master.call(ALICE, "POST", f"/v1/edge/sessions/{session_id}/tickets")
    assert status == 201
    return body["edge_ws_ticket"]


async def _recv(ws) -> dict:
    return orjson.loads(await asyncio.wait_for(ws.receive(), 10))


async def _greeted(ws) -> None:
    kinds = {(await _recv(ws))["type"], (await _recv(ws))["type"]}
    assert kinds == {"session.capabilities", "tool.catalog.publish"}


async def test_upgrades_are_refused_with_json_bodies(edge_master, fake_client):
    _, sid, ticket = await _session(edge_master, fake_client)
    cases = [
        (edge_master.client.websocket(f"/v1/edge/ws/stream?ticket={ticket}&session_id={sid}"),
         426, "UNSUPPORTED_SUBPROTOCOL"),
        (edge_master.websocket(sid, "wrong-ticket"), 401, "INVALID_TICKET"),
        (edge_master.websocket(new_id(), ticket), 401, "INVALID_TICKET"),
    ]  # fmt: skip
    for connection, status, code in cases:
        with pytest.raises(WebsocketResponseError) as refused:
            async with connection as ws:
                await ws.receive()
        assert refused.value.response.status_code == status
        assert (await refused.value.response.get_json())["error_code"] == code
    # The ticket survived the refusals above (they never matched it) and is single use.
    async with edge_master.websocket(sid, ticket) as ws:
        await _greeted(ws)
    with pytest.raises(WebsocketResponseError) as again:
        async with edge_master.websocket(sid, ticket) as ws:
            await ws.receive()
    assert again.value.response.status_code == 401


async def test_client_frames_reach_the_edge_byte_for_byte_and_usage_counts_once(
    edge_master, fake_client
):
    node_id, sid, ticket = await _session(edge_master, fake_client)
    usage_id = new_id()
    usage = (
        (
            '{"v": "rawp-dps-1.0",  "type": "session.usage", "message_id": "MID", '
            '"timestamp": "2026-01-01T00:00:00Z", "session_id": "SID", "x-vendor": [1, 2], '
            '"payload": {"output_tokens": 7, "input_tokens": 5, "tool_invocations": 1, '
            '"cost_usd": 0.25}}'
        )
        .replace("MID", usage_id)
        .replace("SID", sid)
    )
    odd = (
        '{"type":"vendor.custom.event","v":"rawp-dps-1.0","message_id":"MID",'
        '"timestamp":"2026-01-01T00:00:00Z","payload":{"é":"ü"}}'
    ).replace("MID", new_id())
    async with edge_master.websocket(sid, ticket) as ws:
        await _greeted(ws)
        for text in (usage, odd, usage):  # the usage frame again, as a replay would resend it
            await fake_client.push(sid, text)
            assert await asyncio.wait_for(ws.receive(), 10) == text
    status, metrics = await edge_master.call(ALICE, "GET", f"/v1/edge/nodes/{node_id}/metrics")
    assert status == 200
    assert metrics["aggregated_usage"] == {
        "total_input_tokens": 5,
        "total_output_tokens": 7,
        "estimated_cost": 0.25,
        "total_tool_invocations": 1,
    }


async def test_edge_frames_are_checked_deduplicated_and_filtered(edge_master, fake_client):
    _, sid, ticket = await _session(edge_master, fake_client)
    cancel = frame("control.prompt.cancel", {}, sid)
    allowed = frame(
        "control.prompt.request",
        {"prompt_text": "/review main", "input_type": "slash_command", "tool_overrides": ["Read"]},
        sid,
    )
    unknown = (
        '{"v":"rawp-dps-1.0","type":"vendor.ping","message_id":"MID",'
        '"timestamp":"2026-01-01T00:00:00Z","payload":{"n":1}}'
    ).replace("MID", new_id())
    async with edge_master.websocket(sid, ticket) as ws:
        await _greeted(ws)
        refused = {
            "not json at all": "INVALID_FRAME",
            frame("control.prompt.request", {"prompt_text": "x", "tool_overrides": ["bash"]}, sid):
                "PROMPT_REJECTED_BY_POLICY",
            frame("control.prompt.request",
                  {"prompt_text": "/nuke all", "input_type": "slash_command"}, sid):
                "PROMPT_REJECTED_BY_POLICY",
            frame("agent.text.delta", {"content_index": 0, "text": "hi"}, sid):
                "EVENT_NOT_ALLOWED",
            frame("control.prompt.cancel", {}, new_id()): "SESSION_MISMATCH",
            unknown.replace("vendor.ping", "control.model.set"): "INVALID_FRAME",  # no model
        }  # fmt: skip
        for text, code in refused.items():
            await ws.send(text)
            answer = await _recv(ws)
            assert answer["type"] == "session.error" and answer["session_id"] == sid
            assert answer["payload"]["code"] == code, text
        model = frame("control.model.set", {"model": "opus"}, sid)  # issue 30 §1, relayed
        last = frame("control.mode.set", {"mode": "plan"}, sid)
        for text in (cancel, cancel, allowed, unknown, allowed, model, model, last):
            await ws.send(text)
        # One socket's frames are handled in order, so once `last` is there, a duplicate
        # would be there too. The socket stayed up through every refusal.
        await fake_client.wait_received(sid, 5)
    assert fake_client.sessions[sid].received == [cancel, allowed, unknown, model, last]


async def test_duplicates_across_two_edge_sockets_reach_the_client_once(edge_master, fake_client):
    _, sid, ticket = await _session(edge_master, fake_client)
    second = await _ticket(edge_master, sid)
    answer = frame("control.interaction.response", {"interaction_id": "p1", "option_id": "ok"}, sid)
    async with edge_master.websocket(sid, ticket) as one, edge_master.websocket(sid, second) as two:
        await _greeted(one)
        await _greeted(two)
        await one.send(answer)
        await two.send(answer)  # the same answer from the phone and the desktop
        later = frame("control.prompt.cancel", {}, sid)
        await two.send(later)
        await fake_client.wait_received(sid, 2)
        # Both sockets see every client frame, in the same order (fan-out).
        pushed = [frame("agent.text.delta", {"content_index": 0, "text": str(n)}, sid)
                  for n in range(5)]  # fmt: skip
        for text in pushed:
            await fake_client.push(sid, text)
        assert [await one.receive() for _ in pushed] == pushed
        assert [await two.receive() for _ in pushed] == pushed
    assert fake_client.sessions[sid].received == [answer, later]


async def test_a_config_change_reaches_the_nodes_edges_only(edge_master, fake_client):
    node_id, sid, ticket = await _session(edge_master, fake_client)
    other_node = await edge_master.node("discord:other", fake_client.address)
    async with edge_master.websocket(sid, ticket) as ws:
        await _greeted(ws)
        put = await edge_master.client.put(
            "/v1/nodes/config/capabilities",
            json={
                "config_version": 2,
                "effective_at": "2026-01-01T00:00:00Z",
                "reason": "plugin_loaded: vision_v2",
                "capabilities": ["vision_v2"],
            },
            headers={"Authorization": f"Bearer {other_node['access_token']}"},
        )
        assert put.status_code == 200  # another node's change: nothing for this socket
        node = await _node_token(edge_master, node_id)
        put = await edge_master.client.put(
            "/v1/nodes/config/capabilities",
            json={
                "config_version": 2,
                "effective_at": "2026-01-01T00:00:00Z",
                "reason": "plugin_loaded: vision_v2",
                "capabilities": ["vision_v2"],
            },
            headers={"Authorization": f"Bearer {node}"},
        )
        assert put.status_code == 200
        notice = await _recv(ws)  # the first frame: the other node's change sent nothing here
    assert notice["type"] == "node.config.changed"
    assert notice["payload"] == {
        "node_id": node_id,
        "changed_scope": "capabilities",
        "config_version": 2,
        "reason": "plugin_loaded: vision_v2",
    }


async def _node_token(edge_master, node_id: str) -> str:
    """A fresh access token for the node, minted the way pairing and refresh mint them."""
    services = edge_master.services
    async with services.db.begin() as conn:
        issued = await services.tokens.issue(conn, node_id)
    return issued.access_token


async def test_unregistering_the_node_ends_its_sessions_and_closes_their_sockets(
    edge_master, fake_client
):
    node_id, sid, ticket = await _session(edge_master, fake_client)
    async with edge_master.websocket(sid, ticket) as ws:
        await _greeted(ws)
        token = await _node_token(edge_master, node_id)
        response = await edge_master.client.delete(
            "/v1/nodes/self", headers={"Authorization": f"Bearer {token}"}
        )
        assert response.status_code == 204
        with pytest.raises(Exception) as closed:  # quart's WebsocketDisconnectError
            await asyncio.wait_for(ws.receive(), 10)
        assert "Disconnect" in type(closed.value).__name__
    assert await edge_master.call(ALICE, "GET", "/v1/edge/sessions") == (200, {"sessions": []})
    assert await edge_master.call(ALICE, "GET", "/v1/edge/nodes") == (200, {"nodes": []})


async def test_the_master_reattaches_after_its_last_relayed_frame(edge_master, fake_client):
    _, sid, ticket = await _session(edge_master, fake_client)
    async with edge_master.websocket(sid, ticket) as ws:
        await _greeted(ws)
        first, second, third = (
            frame("agent.text.delta", {"content_index": 0, "text": t}, sid) for t in "abc"
        )
        for text in (first, second):
            await fake_client.push(sid, text)
            assert await ws.receive() == text
        await fake_client.drop(sid)  # the client's side of the link goes away
        during = frame("control.prompt.cancel", {}, sid)
        await ws.send(during)  # sent while the master is reattaching: kept, then delivered
        received = await fake_client.wait_received(sid, 1)
        assert received == [during]
        reattach = fake_client.init_bodies[-1]
        assert reattach["reattach"] is True
        assert reattach["last_message_id"] == orjson.loads(second)["message_id"]
        assert len(fake_client.sessions[sid].sockets) == 2
        # The new socket's greeting is not sent again; the stream goes on where it was.
        await fake_client.push(sid, third)
        assert await ws.receive() == third
    status, listed = await edge_master.call(ALICE, "GET", "/v1/edge/sessions?status=RUNNING")
    assert status == 200 and [s["session_id"] for s in listed["sessions"]] == [sid]


async def test_a_frame_refused_for_its_size_is_named(edge_master, fake_client):
    # Issue 28 §3: a prompt past the session's max_frame_size (65536 here) is refused with a
    # session.error whose parent_id and ref_message_id name it, so the edge can mark it.
    _, sid, ticket = await _session(edge_master, fake_client)
    prompt_id = new_id()
    big = frame("control.prompt.request", {"prompt_text": "é" * 40000}, sid, message_id=prompt_id)
    async with edge_master.websocket(sid, ticket) as ws:
        await _greeted(ws)
        await ws.send(big)
        answer = await _recv(ws)
        assert answer["type"] == "session.error" and answer["session_id"] == sid
        assert answer["payload"]["code"] == "FRAME_TOO_LARGE"
        assert answer["parent_id"] == answer["payload"]["ref_message_id"] == prompt_id
        # The socket stayed up, and the refused frame never reached the client.
        small = frame("control.prompt.request", {"prompt_text": "short"}, sid)
        await ws.send(small)
        await fake_client.wait_received(sid, 1)
    assert fake_client.sessions[sid].received == [small]
