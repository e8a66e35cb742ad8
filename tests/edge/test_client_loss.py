"""The master notices a client that went away (real processes): its sessions become DETACHED,
then TERMINATED once the pinned `reattach_window` has passed, and their edges are told."""

from __future__ import annotations

import asyncio

import pytest

from tests.edge.stack import demo_session, edge_for, recv, start_stack

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
        node_id, sid, ws = await demo_session(edge, stack.root)
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


@pytest.fixture
def restart_stack(processes, tmp_path):
    made = start_stack(processes, tmp_path, OWNER)
    made.start_client()
    yield made
    made.proxy.close()


async def test_a_restarted_master_reattaches_its_sessions(restart_stack):
    from tests.edge.stack import EDGE_SECRET, frame, recv_until
    from tests.support import wait_for_http

    stack = restart_stack
    async with edge_for(stack.master_url, OWNER) as edge:
        _, sid, ws = await demo_session(edge, stack.root)
        await ws.send(frame("control.prompt.request", {"prompt_text": "before"}, sid))
        await recv_until(ws, "session.turn.end")

    master = stack.processes.procs[0]
    master.terminate()
    assert master.wait(timeout=30) == 0
    await asyncio.wait_for(ws.wait_closed(), 10)  # the edge learns at once, and comes back

    again = stack.processes.rawp(
        *stack.master_args,
        env={"RAWP_EDGE_SECRET": EDGE_SECRET},
        stdout=stack.master_log.open("ab"),
    )
    wait_for_http(f"{stack.master_url}/v1/edge/nodes", proc=again, timeout=30)
    async with edge_for(stack.master_url, OWNER) as edge:
        # The new process reattaches by itself (DETACHED until the client has answered).
        for _ in range(400):
            status, listed = await edge.call("GET", "/v1/edge/sessions")
            states = [(s["session_id"], s["status"]) for s in listed["sessions"]]
            assert states in ([(sid, "DETACHED")], [(sid, "RUNNING")])
            if states == [(sid, "RUNNING")]:
                break
            await asyncio.sleep(0.05)
        assert states == [(sid, "RUNNING")]
        status, ticket = await edge.call("POST", f"/v1/edge/sessions/{sid}/tickets")
        assert status == 201
        back = await edge.connect(sid, ticket["edge_ws_ticket"])
        greeting = await recv_until(back, "tool.catalog.publish")  # the client's, anew
        assert greeting[0]["type"] == "session.capabilities"
        await back.send(frame("control.prompt.request", {"prompt_text": "after"}, sid))
        turn = await recv_until(back, "session.turn.end")
        done = next(f for f in turn if f["type"] == "agent.text.done")
        assert 'You said: "after"' in done["payload"]["text"]
        status, listed = await edge.call("GET", "/v1/edge/sessions?status=RUNNING")
        assert [s["session_id"] for s in listed["sessions"]] == [sid]
