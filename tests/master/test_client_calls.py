"""The master calling a client (§3.4, §4.1, §4.1.8) against a fake client HTTP server.

The fake client (tests/master/fake_client.py) is a small aiohttp server on a loopback port;
the master's real `ClientCaller` talks to it over real HTTP.
"""

from __future__ import annotations

import asyncio
import logging

import pytest

from master.client_calls import ClientCaller, NodeCallError
from master.storage import nodes as node_store
from rawp.clock import new_id
from rawp.errors import NotFound
from rawp.session_state import SessionEvent
from tests.support import free_port


@pytest.fixture
async def caller(dev_master, clock, sleeps):
    s = dev_master.services
    caller = ClientCaller(
        s.db, s.config, clock, addresses=s.addresses, unsynced_rate=1.0, sleep=sleeps
    )
    yield caller
    await caller.close()


async def _credentials(master, node_id):
    async with master.services.db.connect() as conn:
        return (await node_store.get_node(conn, node_id)).credentials


async def test_401_refreshes_once_then_retries(dev_master, fake_client, caller, sleeps):
    node = await dev_master.pair(address=fake_client.address)
    reply = await caller.call(node["node_id"], "GET", "/v1/health")
    assert sleeps.recorded == [1.0, 1.0]  # refresh and retry also respect the 1/s pace
    assert (reply.status, reply.body) == (200, {"status": "online"})
    assert fake_client.seen == [
        ("/v1/health", "client-access"),
        ("/v1/auth/refresh", "client-refresh"),
        ("/v1/health", "fresh-access-1"),
    ]
    stored = await _credentials(dev_master, node["node_id"])
    assert (stored.access_token, stored.refresh_token) == ("fresh-access-1", "client-refresh-2")
    fake_client.seen.clear()
    await caller.call(node["node_id"], "GET", "/v1/health")
    assert fake_client.seen == [("/v1/health", "fresh-access-1")]  # no refresh needed now


async def test_concurrent_401s_share_one_refresh(dev_master, fake_client, clock):
    node = await dev_master.pair(address=fake_client.address)
    s = dev_master.services
    fake_client.refresh_delay = 0.05

    async def no_wait(_seconds):
        return None

    caller = ClientCaller(
        s.db, s.config, clock, addresses=s.addresses, unsynced_rate=1000.0, sleep=no_wait
    )
    try:
        replies = await asyncio.gather(
            *(caller.call(node["node_id"], "GET", "/v1/health") for _ in range(3))
        )
    finally:
        await caller.close()
    assert [r.status for r in replies] == [200, 200, 200]
    assert [p for p, _ in fake_client.seen].count("/v1/auth/refresh") == 1


async def test_a_refused_refresh_is_a_clear_error(dev_master, fake_client, caller):
    node = await dev_master.pair(address=fake_client.address)
    fake_client.refusing_refresh = True
    with pytest.raises(NodeCallError) as info:
        await caller.call(node["node_id"], "GET", "/v1/health")
    assert (info.value.status, info.value.error_code) == (502, "NODE_AUTH_FAILED")
    assert "client-refresh" not in info.value.message  # secrets stay out of messages


async def test_still_401_after_refresh_is_returned_not_looped(dev_master, fake_client, caller):
    node = await dev_master.pair(address=fake_client.address)
    fake_client.forget_after_refresh = True  # the client keeps refusing even new tokens
    reply = await caller.call(node["node_id"], "GET", "/v1/health")
    assert reply.status == 401
    assert [p for p, _ in fake_client.seen] == ["/v1/health", "/v1/auth/refresh", "/v1/health"]


async def test_calls_are_spaced_by_the_synced_rate_limit(dev_master, fake_client, caller, sleeps):
    node = await dev_master.pair(address=fake_client.address)
    await dev_master.put(node, "limits", dev_master.limits_body(1, rate_limit=4))
    fake_client.valid_access = {"client-access"}
    for _ in range(4):
        assert (await caller.call(node["node_id"], "GET", "/v1/health")).status == 200
    assert sleeps.recorded == [0.25, 0.25, 0.25]


async def test_unsynced_node_uses_the_conservative_rate(dev_master, fake_client, caller, sleeps):
    node = await dev_master.pair(address=fake_client.address)
    fake_client.valid_access = {"client-access"}
    for _ in range(3):
        await caller.call(node["node_id"], "GET", "/v1/health")
    assert sleeps.recorded == [1.0, 1.0]


async def test_session_traffic_uses_the_pinned_rate_limit(dev_master, fake_client, caller, sleeps):
    node = await dev_master.pair(address=fake_client.address)
    await dev_master.put(node, "limits", dev_master.limits_body(1, rate_limit=2))
    await dev_master.put(node, "capabilities", dev_master.capabilities_body(1))
    session_id = new_id()
    config = dev_master.services.config
    await config.pin_session(
        session_id=session_id,
        node_id=node["node_id"],
        user_id="discord:1",
        agent_name="demo",
        workspace_path="/w",
    )
    await config.move_session(session_id, SessionEvent.ATTACH)
    await dev_master.put(node, "limits", dev_master.limits_body(2, rate_limit=100))
    fake_client.valid_access = {"client-access"}
    for _ in range(3):
        await caller.call(node["node_id"], "GET", "/v1/health", session_id=session_id)
    assert sleeps.recorded == [0.5, 0.5]  # the session's pinned 2/s, not the new 100/s


async def test_a_deprecation_warning_from_the_client_is_logged(
    dev_master, fake_client, caller, caplog
):
    node = await dev_master.pair(address=fake_client.address)
    fake_client.valid_access = {"client-access"}
    fake_client.warning = '299 - "Deprecated API"'
    with caplog.at_level(logging.WARNING, logger="rawp.master.client_calls"):
        await caller.call(node["node_id"], "GET", "/v1/health")
    assert any("Deprecated API" in r.getMessage() for r in caplog.records)


async def test_expired_credentials_are_refreshed_before_the_call(
    dev_master, fake_client, caller, clock
):
    node = await dev_master.pair(address=fake_client.address)
    clock.advance(3600)  # the pairing credentials said expires_in 3600
    await caller.call(node["node_id"], "GET", "/v1/health")
    assert [p for p, _ in fake_client.seen] == ["/v1/auth/refresh", "/v1/health"]


async def test_unreachable_and_unknown_nodes(dev_master, caller):
    port = free_port()  # nothing listens here
    node = await dev_master.pair(address=f"http://127.0.0.1:{port}")
    with pytest.raises(NodeCallError) as info:
        await caller.call(node["node_id"], "GET", "/v1/health")
    assert info.value.error_code == "NODE_UNREACHABLE"
    with pytest.raises(NotFound):
        await caller.call(new_id(), "GET", "/v1/health")
