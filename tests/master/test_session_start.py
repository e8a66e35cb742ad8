"""The master starting sessions on a client (§5.1, §4.1.8, K-03) against the fake client."""

from __future__ import annotations

import pytest

from master.client_calls import ClientCaller
from master.services.session_start import SessionInitFailed, SessionStarter, stream_url
from rawp.clock import is_uuid4
from rawp.errors import NotFound, ServiceUnavailable
from rawp.session_state import SessionEvent, SessionState


@pytest.fixture
async def starter(dev_master, clock, sleeps):
    s = dev_master.services
    calls = ClientCaller(s.db, s.config, clock, addresses=s.addresses, sleep=sleeps)
    yield SessionStarter(s.config, calls)
    await calls.close()


@pytest.fixture
async def node(dev_master, fake_client):
    fake_client.valid_access = {"client-access"}
    return await dev_master.pair(address=fake_client.address)


async def _sync(master, node, rate_limit=5):
    await master.put(node, "limits", master.limits_body(1, rate_limit=rate_limit))
    await master.put(node, "capabilities", master.capabilities_body(1, ["vision_v1"]))


async def _start(starter, node):
    return await starter.start(
        node_id=node["node_id"], user_id="discord:1", agent_name="demo", workspace_path="/w"
    )


async def test_no_session_init_before_both_scopes_sync(dev_master, fake_client, starter, node):
    await dev_master.put(node, "limits", dev_master.limits_body(1))
    with pytest.raises(ServiceUnavailable) as info:
        await _start(starter, node)
    assert info.value.error_code == "CONFIG_NOT_SYNCED"
    assert fake_client.init_bodies == []  # the client was never asked (M-SESS-01)


async def test_start_sends_the_required_fields_and_pins_config(
    dev_master, fake_client, starter, node
):
    await _sync(dev_master, node, rate_limit=5)
    started = await _start(starter, node)
    [sent] = fake_client.init_bodies
    assert is_uuid4(sent["session_id"]) and sent["session_id"] == started.session_id
    assert sent["ticket"] == started.ticket and len(started.ticket) >= 32
    assert (sent["agent_name"], sent["workspace_path"], sent["reattach"]) == ("demo", "/w", False)
    assert started.pinned.limits.rate_limit == 5
    assert started.pinned.capabilities == ("vision_v1",)
    host = fake_client.address.removeprefix("http://")
    assert started.stream_url == (
        f"ws://{host}/v1/ws/stream?ticket={started.ticket}&session_id={started.session_id}"
    )
    assert await dev_master.services.config.session_status(started.session_id) is SessionState.INIT


async def test_reattach_keeps_the_pinned_config_and_gets_a_new_ticket(
    dev_master, fake_client, starter, node
):
    await _sync(dev_master, node, rate_limit=5)
    started = await _start(starter, node)
    for event in (SessionEvent.ATTACH, SessionEvent.DETACH):
        await dev_master.services.config.move_session(started.session_id, event)
    await dev_master.put(node, "limits", dev_master.limits_body(2, rate_limit=50))
    again = await starter.reattach(
        node_id=node["node_id"],
        session_id=started.session_id,
        last_message_id="0b6f8e2a-4c3d-4e5f-8a9b-0c1d2e3f4a5b",
    )
    sent = fake_client.init_bodies[-1]
    assert sent["reattach"] is True and sent["ticket"] != started.ticket
    assert sent["last_message_id"] == "0b6f8e2a-4c3d-4e5f-8a9b-0c1d2e3f4a5b"
    assert again.pinned == started.pinned  # M-PIN-03


async def test_a_refused_init_ends_the_session_record(dev_master, fake_client, starter, node):
    await _sync(dev_master, node)
    fake_client.init_status = 409
    with pytest.raises(SessionInitFailed) as info:
        await _start(starter, node)
    assert "409" in info.value.message and "SESSION_CONFLICT" in info.value.message
    session_id = fake_client.init_bodies[0]["session_id"]
    status = await dev_master.services.config.session_status(session_id)
    assert status is SessionState.TERMINATED
    with pytest.raises(NotFound):
        await starter.reattach(node_id=node["node_id"], session_id=session_id)


def test_stream_url_schemes():
    assert stream_url("https://n.example:8701", "t", "s") == (
        "wss://n.example:8701/v1/ws/stream?ticket=t&session_id=s"
    )
    assert stream_url("http://10.0.0.2:1", "a+b", "s").startswith("ws://10.0.0.2:1/v1/ws/stream?")
    assert "ticket=a%2Bb" in stream_url("http://10.0.0.2:1", "a+b", "s")


async def test_a_worktree_is_asked_for_only_when_wanted_and_a_client_that_ignores_it_is_refused(
    dev_master, fake_client, starter, node
):
    # Issue 30 §3: the fake client, like a spec client, ignores `worktree` (§1.3) and makes none;
    # the session would run in the workspace itself, so the master ends it and says why.
    await _sync(dev_master, node)
    await _start(starter, node)
    assert "worktree" not in fake_client.init_bodies[-1]  # not sent when not asked for
    with pytest.raises(SessionInitFailed) as info:
        await starter.start(
            node_id=node["node_id"],
            user_id="discord:1",
            agent_name="demo",
            workspace_path="/w",
            worktree=True,
        )
    sent = fake_client.init_bodies[-1]
    assert sent["worktree"] is True
    assert info.value.extra["client_error_code"] == "WORKTREES_UNSUPPORTED"
    status = await dev_master.services.config.session_status(sent["session_id"])
    assert status is SessionState.TERMINATED
