"""Two real `rawp master` processes on one PostgreSQL database and one Redis (issue 9): what
one replica spends or burns, the other sees. Both share one state directory, hence one signing
key (docs/scale-out.md)."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest
from websockets.exceptions import InvalidStatus

from tests.edge.stack import Edge, edge_for, read_until, recv
from tests.scale.cluster import start_replicas
from tests.support import free_port

OWNER = "discord:4242"


async def test_the_pairing_budget_is_shared_by_replicas(processes, tmp_path, pg_url, redis_prefix):
    client, prefix = redis_prefix
    a, b = start_replicas(processes, tmp_path, pg_url, prefix, "--auth-rate-limit", "3/h").urls
    statuses = []
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as http:
        for url in (a, b, a, b, a):
            async with http.post(f"{url}/v1/auth/pair", json={}) as response:
                body = await response.json()
                statuses.append((response.status, body["error_code"]))
                retry_after = response.headers.get("Retry-After")
    # Three requests of the address's budget pass to validation (400); then both refuse.
    assert statuses == [(400, "INVALID_REQUEST")] * 3 + [(429, "RATE_LIMITED")] * 2
    assert 1100 < int(retry_after) <= 1200
    assert await client.exists(prefix + "rate:addr:127.0.0.1") == 1


async def test_a_ticket_used_on_one_replica_is_dead_on_the_other(
    processes, tmp_path, pg_url, redis_prefix
):
    _, prefix = redis_prefix
    a, b = start_replicas(processes, tmp_path, pg_url, prefix).urls
    root, client_port = tmp_path / "root", free_port()
    (root / "ws").mkdir(parents=True)
    async with edge_for(a, OWNER) as edge:
        status, body = await edge.call("POST", "/v1/edge/pairing-urls")
        assert status == 201, body
        pair = processes.rawp(
            "client", "pair", body["pairing_url"], "--name", "scale-box", "--dev",
            "--state-dir", str(tmp_path / "c"), "--public-address", f"http://127.0.0.1:{client_port}",
        )  # fmt: skip
        out, _ = await asyncio.to_thread(pair.communicate, timeout=60)
        assert pair.returncode == 0, out.decode()
        client = processes.rawp(
            "client", "--dev", "--port", str(client_port), "--state-dir", str(tmp_path / "c"),
            "--allow-root", str(root),
        )  # fmt: skip
        await asyncio.to_thread(read_until, client, "config synced with the master", 60)

        status, nodes = await edge.call("GET", "/v1/edge/nodes")
        assert status == 200 and len(nodes["nodes"]) == 1, nodes
        node_id = nodes["nodes"][0]["node_id"]
        status, made = await edge.call(
            "POST",
            f"/v1/edge/nodes/{node_id}/sessions",
            {"agent_name": "demo", "workspace_path": str(root / "ws")},
        )
        assert status == 201, made
        sid, ticket = made["session_id"], made["edge_ws_ticket"]

        # The same user's token, on replica B. (B then reattaches the client too, taking the
        # socket from A: the missing session lease of docs/scale-out.md. Only the ticket is
        # under test here.)
        on_b = Edge(b, edge.token, edge.http)
        ws = await asyncio.wait_for(on_b.connect(sid, ticket), 30)
        assert (await recv(ws))["session_id"] == sid  # B admitted it and greets the session
        await on_b.close()

        for url in (a, b):  # burnt on B: refused on A, and on B again
            with pytest.raises(InvalidStatus) as refused:
                await asyncio.wait_for(Edge(url, edge.token, edge.http).connect(sid, ticket), 30)
            assert refused.value.response.status_code == 401
            assert b"INVALID_TICKET" in refused.value.response.body
