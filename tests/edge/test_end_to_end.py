"""The Edge API and the data plane end to end: a real master and a real client (separate
processes, loopback, `--dev`), the demo agent, and an edge written in the test."""

from __future__ import annotations

import asyncio

from rawp.clock import new_id
from tests.edge.conftest import OWNER
from tests.edge.stack import edge_for, frame, push_tighter_limits, recv, recv_until

TURN_TYPES = {"session.turn.start", "agent.text.delta", "agent.text.done", "session.usage"}


async def _node(edge) -> dict:
    status, body = await edge.call("GET", "/v1/edge/nodes")
    assert status == 200, body
    assert len(body["nodes"]) == 1
    return body["nodes"][0]


async def _session(edge, stack, **body) -> dict:
    node = await _node(edge)
    body.setdefault("agent_name", "demo")
    body.setdefault("workspace_path", str(stack.root))
    status, made = await edge.call("POST", f"/v1/edge/nodes/{node['node_id']}/sessions", body)
    assert status == 201, made
    return made


async def _greeted(ws) -> list[dict]:
    """The frames an edge gets first: the client's capabilities and tool catalog."""
    first = [await recv(ws), await recv(ws)]
    assert [f["type"] for f in first] == ["session.capabilities", "tool.catalog.publish"]
    return first


async def test_a_full_turn_reaches_the_edge_and_usage_is_metered(stack):
    async with edge_for(stack.master_url, OWNER) as edge:
        node = await _node(edge)
        assert node["device_name"] == "test-box"
        assert node["status"] == "online"
        assert node["config_versions"] == {"limits": 1, "capabilities": 1}
        assert "file_search_v1" in node["capabilities"]
        status, before = await edge.call(
            "GET", f"/v1/edge/nodes/{node['node_id']}/metrics?period=today"
        )
        assert status == 200

        made = await _session(edge, stack)
        assert made["status"] == "RUNNING"
        assert made["pinned_config_versions"] == {"limits": 1, "capabilities": 1}
        ws = await edge.connect(made["session_id"], made["edge_ws_ticket"])
        # The edge offered permessage-deflate (the `websockets` default, as browsers do); the
        # master declines it: a zlib state per socket would cost ~256 KiB × thousands (issue 7).
        assert "sec-websocket-extensions" not in ws.response.headers
        await _greeted(ws)

        usage_seen = []
        for text in ("fix the bug", "and explain it"):
            prompt = frame(
                "control.prompt.request", {"prompt_text": text}, session_id=made["session_id"]
            )
            await ws.send(prompt)
            turn = await recv_until(ws, "session.turn.end")
            types = [f["type"] for f in turn]
            assert set(types) >= TURN_TYPES, types
            assert turn[-1]["payload"]["stop_reason"] == "end_turn"
            done = next(f for f in turn if f["type"] == "agent.text.done")
            assert f'You said: "{text}"' in done["payload"]["text"]
            assert all(f["session_id"] == made["session_id"] for f in turn)
            usage_seen += [f["payload"] for f in turn if f["type"] == "session.usage"]

        status, after = await edge.call("GET", f"/v1/edge/nodes/{node['node_id']}/metrics")
        assert status == 200 and after["period"] == "today"  # the default period
        got, was = after["aggregated_usage"], before["aggregated_usage"]
        assert len(usage_seen) == 2
        for field, key in (
            ("total_input_tokens", "input_tokens"),
            ("total_output_tokens", "output_tokens"),
            ("total_tool_invocations", "tool_invocations"),
        ):
            assert got[field] - was[field] == sum(u.get(key, 0) for u in usage_seen), field
        assert after["health"]["uptime_seconds"] >= 0

        status, listed = await edge.call("GET", "/v1/edge/sessions?status=RUNNING")
        assert status == 200
        mine = [s for s in listed["sessions"] if s["session_id"] == made["session_id"]]
        assert mine and mine[0]["agent_name"] == "demo" and mine[0]["node_id"] == node["node_id"]
        status, busy = await edge.call("GET", "/v1/edge/nodes")
        assert busy["nodes"][0]["status"] == "busy"
        assert busy["nodes"][0]["active_sessions_count"] >= 1

        status, _ = await edge.call("DELETE", f"/v1/edge/sessions/{made['session_id']}")
        assert status == 204
        await asyncio.wait_for(ws.wait_closed(), 15)
        assert ws.close_code == 1000
        status, listed = await edge.call("GET", "/v1/edge/sessions")
        assert made["session_id"] not in {s["session_id"] for s in listed["sessions"]}
        status, _ = await edge.call("DELETE", f"/v1/edge/sessions/{made['session_id']}")
        assert status == 404


async def test_cancel_a_turn_and_search_files(stack):
    async with edge_for(stack.master_url, OWNER) as edge:
        made = await _session(edge, stack)
        sid = made["session_id"]
        ws = await edge.connect(sid, made["edge_ws_ticket"])
        await _greeted(ws)

        # The prompt asks for approval, so the turn waits until it is answered — or cancelled.
        await ws.send(frame("control.prompt.request", {"prompt_text": "approve this"}, sid))
        seen = await recv_until(ws, "agent.interaction.request")
        turn_id = seen[0]["payload"]["turn_id"]
        await ws.send(frame("control.prompt.cancel", {"turn_id": turn_id}, sid))
        end = (await recv_until(ws, "session.turn.end"))[-1]
        assert end["payload"] == {**end["payload"], "turn_id": turn_id, "stop_reason": "cancelled"}

        query_id = new_id()
        search = frame("control.file.search", {"query_id": query_id, "query": "auth"}, sid)
        await ws.send(search)
        found = await recv_until(ws, "session.file.candidates")
        candidates = found[-1]
        assert candidates["payload"]["query_id"] == query_id
        assert candidates["parent_id"] == orjson_id(search)  # K-10: relayed untouched
        assert "src/auth.py" in [c["path"] for c in candidates["payload"]["candidates"]]
        await edge.call("DELETE", f"/v1/edge/sessions/{sid}")


def orjson_id(text: str) -> str:
    import orjson

    return orjson.loads(text)["message_id"]


async def test_two_edges_see_identical_streams_and_a_reconnect_picks_up(stack):
    async with edge_for(stack.master_url, OWNER) as edge:
        made = await _session(edge, stack)
        sid = made["session_id"]
        first = await edge.connect(sid, made["edge_ws_ticket"])
        await _greeted(first)
        status, again = await edge.call("POST", f"/v1/edge/sessions/{sid}/tickets")
        assert status == 201
        second = await edge.connect(sid, again["edge_ws_ticket"])
        greeting = await _greeted(second)  # a late socket is greeted from the master's cache
        assert greeting[0]["payload"]["protocol"] == "rawp-dps-1.0"

        await first.send(frame("control.prompt.request", {"prompt_text": "both of you"}, sid))
        one = await recv_until(first, "session.turn.end")
        two = await recv_until(second, "session.turn.end")
        assert [f["message_id"] for f in one] == [f["message_id"] for f in two]
        assert one == two

        # A ticket is single use: the second socket's ticket cannot open a third.
        try:
            await edge.connect(sid, again["edge_ws_ticket"])
            raise AssertionError("a used ticket opened a socket")
        except Exception as exc:  # websockets.InvalidStatus
            assert getattr(getattr(exc, "response", None), "status_code", None) == 401

        # The first edge drops and comes back with a new ticket and its cursor.
        cursor = one[len(one) // 2]["message_id"]
        await first.close()
        status, third = await edge.call("POST", f"/v1/edge/sessions/{sid}/tickets")
        back = await edge.connect(sid, third["edge_ws_ticket"], last_message_id=cursor)
        # No greeting again (issue 14 §7): the edge has one, and what the agent published
        # after the cursor (its commands, a new catalog) is among the replayed frames.
        history = await recv(back)
        assert history["type"] == "session.history"
        missed = [await recv(back) for _ in range(history["payload"]["replayed"])]
        assert [f["message_id"] for f in missed] == [
            f["message_id"] for f in one[len(one) // 2 + 1 :]
        ]
        await back.send(frame("control.prompt.request", {"prompt_text": "and again"}, sid))
        live = await recv_until(back, "session.turn.end")
        seen = [f["message_id"] for f in [history, *missed, *live]]
        assert len(seen) == len(set(seen)), "a frame came twice on the reconnected socket"
        await edge.call("DELETE", f"/v1/edge/sessions/{sid}")


async def test_a_limits_change_reaches_every_edge_socket_of_the_node(stack):
    async with edge_for(stack.master_url, OWNER) as edge:
        one, two = await _session(edge, stack), await _session(edge, stack)
        sockets = []
        for made in (one, two):
            ws = await edge.connect(made["session_id"], made["edge_ws_ticket"])
            await _greeted(ws)
            sockets.append(ws)
        node = await _node(edge)

        versions = {"limits": node["config_versions"]["limits"], "capabilities": 1}
        _, version = await push_tighter_limits(stack.client_state, stack.root, versions)

        pushed = [await recv(ws) for ws in sockets]
        for notice in pushed:
            assert notice["type"] == "node.config.changed"
            assert "session_id" not in notice and "turn_id" not in notice  # E-NOT-02
            assert notice["payload"] == {
                "node_id": node["node_id"],
                "changed_scope": "limits",
                "config_version": version,
                "reason": "test: tighter limits",
            }
        assert pushed[0]["message_id"] == pushed[1]["message_id"]  # one notice

        status, config = await edge.call("GET", f"/v1/edge/nodes/{node['node_id']}/config")
        assert status == 200
        assert config["limits"]["config_version"] == version
        assert config["limits"]["limits"]["rate_limit"] == 40
        # The sessions keep the config they were pinned to (E-API-12, E-EDGE-04).
        status, listed = await edge.call("GET", f"/v1/edge/sessions?node_id={node['node_id']}")
        pins = {s["session_id"]: s["pinned_config_versions"] for s in listed["sessions"]}
        assert pins[one["session_id"]] == one["pinned_config_versions"]
        for made in (one, two):
            await edge.call("DELETE", f"/v1/edge/sessions/{made['session_id']}")


async def test_a_network_blip_between_master_and_client_leaves_no_gap(stack):
    async with edge_for(stack.master_url, OWNER) as edge:
        made = await _session(edge, stack)
        sid = made["session_id"]
        ws = await edge.connect(sid, made["edge_ws_ticket"])
        await _greeted(ws)
        await ws.send(frame("control.prompt.request", {"prompt_text": "a long answer"}, sid))
        seen = await recv_until(ws, "agent.text.delta")
        assert stack.proxy.cut() > 0  # the master's socket to the client dies mid-turn
        seen += await recv_until(ws, "session.turn.end", wait=60)

        kinds = [f["type"] for f in seen]
        assert "session.history" in kinds  # the master reattached; the client replayed
        unique = {}
        for f in seen:
            unique.setdefault(f["message_id"], f)
        deltas = [f["payload"]["text"] for f in unique.values() if f["type"] == "agent.text.delta"]
        done = next(f for f in unique.values() if f["type"] == "agent.text.done")
        assert "".join(deltas) == done["payload"]["text"]  # nothing lost, nothing doubled
        assert len(done["payload"]["text"]) > 5000

        status, listed = await edge.call("GET", "/v1/edge/sessions?status=RUNNING")
        assert status == 200
        assert sid in {s["session_id"] for s in listed["sessions"]}
        # The session goes on after the blip.
        await ws.send(frame("control.prompt.request", {"prompt_text": "still there?"}, sid))
        again = await recv_until(ws, "session.turn.end")
        assert again[-1]["payload"]["stop_reason"] == "end_turn"
        await edge.call("DELETE", f"/v1/edge/sessions/{sid}")


async def test_secrets_never_reach_the_masters_log(stack):
    from tests.edge.stack import EDGE_SECRET

    async with edge_for(stack.master_url, OWNER) as edge:
        made = await _session(edge, stack)
        ws = await edge.connect(made["session_id"], made["edge_ws_ticket"])
        await _greeted(ws)
        status, again = await edge.call("POST", f"/v1/edge/sessions/{made['session_id']}/tickets")
        assert status == 201
        await edge.call("DELETE", f"/v1/edge/sessions/{made['session_id']}")
        log = stack.master_log.read_text()
        assert made["session_id"] in log  # the log does tell what happened to the session
        for secret in (EDGE_SECRET, edge.token, made["edge_ws_ticket"], again["edge_ws_ticket"]):
            assert secret not in log


async def test_without_a_workspace_the_clients_default_is_used(stack):
    async with edge_for(stack.master_url, OWNER) as edge:
        node = await _node(edge)
        status, made = await edge.call(
            "POST", f"/v1/edge/nodes/{node['node_id']}/sessions", {"agent_name": "demo"}
        )
        assert status == 201, made  # the client's advertised default_workspace_path
        sid = made["session_id"]
        ws = await edge.connect(sid, made["edge_ws_ticket"])
        await _greeted(ws)
        query_id = new_id()
        await ws.send(frame("control.file.search", {"query_id": query_id, "query": "auth"}, sid))
        found = (await recv_until(ws, "session.file.candidates"))[-1]
        # The default is the first allowed root, one level above the tests' workspace.
        assert "ws/src/auth.py" in [c["path"] for c in found["payload"]["candidates"]]
        status, _ = await edge.call(
            "POST", f"/v1/edge/nodes/{node['node_id']}/sessions", {"agent_name": "nope"}
        )
        assert status == 403  # the client's AGENT_NOT_ALLOWED, passed on
        await edge.call("DELETE", f"/v1/edge/sessions/{sid}")
