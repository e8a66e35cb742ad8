"""The master notices a client that went away (real processes): its sessions become DETACHED,
then TERMINATED once the pinned `reattach_window` has passed, and their edges are told."""

from __future__ import annotations

import asyncio

import pytest

from tests.edge.stack import edge_for, recv, start_stack

OWNER = "slack:T1:U7"
WINDOW = 4  # seconds: the client's reattach_window, pinned to the session at init


@pytest.fixture
def lonely_stack(processes, tmp_path):
    made = start_stack(processes, tmp_path, OWNER)
    made.start_client("--reattach-window", str(WINDOW))
    yield made
    made.proxy.close()


async def _status(edge, session_id: str) -> str | None:
    status, listed = await edge.call("GET", "/v1/edge/sessions")
    assert status == 200
    return next((s["status"] for s in listed["sessions"] if s["session_id"] == session_id), None)


async def test_sessions_of_a_vanished_client_detach_then_terminate(lonely_stack):
    stack = lonely_stack
    async with edge_for(stack.master_url, OWNER) as edge:
        status, nodes = await edge.call("GET", "/v1/edge/nodes")
        node_id = nodes["nodes"][0]["node_id"]
        status, made = await edge.call(
            "POST",
            f"/v1/edge/nodes/{node_id}/sessions",
            {"agent_name": "demo", "workspace_path": str(stack.root)},
        )
        assert status == 201, made
        sid = made["session_id"]
        ws = await edge.connect(sid, made["edge_ws_ticket"])
        assert (await recv(ws))["type"] == "session.capabilities"
        assert await _status(edge, sid) == "RUNNING"

        stack.stop_client()  # the machine goes away

        seen = set()
        for _ in range(600):
            current = await _status(edge, sid)
            seen.add(current)
            if current is None:
                break
            await asyncio.sleep(0.05)
        assert "DETACHED" in seen  # first detached, while the window is open
        assert current is None  # then TERMINATED, which is never listed
        await asyncio.wait_for(ws.wait_closed(), 30)
        assert ws.close_code == 1001
        assert "session ended" in ws.close_reason

        status, nodes = await edge.call("GET", "/v1/edge/nodes")
        assert nodes["nodes"][0]["status"] == "offline"
        assert nodes["nodes"][0]["active_sessions_count"] == 0
        status, metrics = await edge.call("GET", f"/v1/edge/nodes/{node_id}/metrics?period=week")
        assert status == 200 and "health check failed" in metrics["health"]["last_error"]
