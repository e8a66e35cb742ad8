"""Config scope versions, replacement, the sync gate and session pinning (§4.1.1–§4.1.9)."""

from __future__ import annotations

import asyncio
import logging

import pytest

from master.api.nodes import LEGACY_WARNING
from rawp.clock import iso, new_id
from rawp.errors import ServiceUnavailable
from rawp.session_state import SessionEvent, SessionState


@pytest.fixture
async def node(master):
    return await master.pair()


async def _sync_both(master, node, limits_version=1, caps_version=1, **limits):
    r1 = await master.put(node, "limits", master.limits_body(limits_version, **limits))
    r2 = await master.put(node, "capabilities", master.capabilities_body(caps_version))
    assert (r1.status_code, r2.status_code) == (200, 200)


async def _session(master, node, status=SessionState.RUNNING) -> str:
    session_id = new_id()
    await master.services.config.pin_session(
        session_id=session_id,
        node_id=node["node_id"],
        user_id="discord:1",
        agent_name="demo",
        workspace_path="/work",
    )
    for event in _PATH[status]:  # along the table (§5): states are never assigned
        await master.services.config.move_session(session_id, event)
    return session_id


_PATH = {
    SessionState.INIT: (),
    SessionState.RUNNING: (SessionEvent.ATTACH,),
    SessionState.DETACHED: (SessionEvent.ATTACH, SessionEvent.DETACH),
}


async def test_accepted_update_echoes_version_time_and_affected_sessions(master, node):
    response = await master.put(node, "limits", master.limits_body(1))
    assert response.status_code == 200
    assert await response.get_json() == {
        "config_version": 1,
        "accepted_at": iso(master.clock.now()),
        "active_sessions_affected": 0,
    }


async def test_versions_must_increase(master, node):
    for version in (1, 2, 5):
        response = await master.put(node, "limits", master.limits_body(version))
        assert response.status_code == 200
    for stale in (5, 4, 2):
        response = await master.put(node, "limits", master.limits_body(stale, rate_limit=7))
        assert response.status_code == 409
        body = await response.get_json()
        assert body["error_code"] == "CONFIG_VERSION_CONFLICT"
        assert body["current_config_version"] == 5
        assert body["message"]
    held = await master.services.config.snapshots(node["node_id"])
    assert held["limits"].version == 5
    assert held["limits"].snapshot["rate_limit"] == 50  # the stale updates changed nothing


async def test_version_one_always_wins_and_resets_the_counter(master, node):
    await master.put(node, "limits", master.limits_body(1))
    await master.put(node, "limits", master.limits_body(9))
    restart = await master.put(node, "limits", master.limits_body(1, rate_limit=3))
    assert restart.status_code == 200
    held = await master.services.config.snapshots(node["node_id"])
    assert (held["limits"].version, held["limits"].snapshot["rate_limit"]) == (1, 3)
    assert (await master.put(node, "limits", master.limits_body(2))).status_code == 200


async def test_k02_retry_with_current_plus_one_succeeds(master, node):
    await master.put(node, "capabilities", master.capabilities_body(4))
    conflict = await master.put(node, "capabilities", master.capabilities_body(3))
    current = (await conflict.get_json())["current_config_version"]
    retry = await master.put(node, "capabilities", master.capabilities_body(current + 1))
    assert retry.status_code == 200


async def test_scopes_have_independent_versions(master, node):
    await master.put(node, "limits", master.limits_body(7))
    response = await master.put(node, "capabilities", master.capabilities_body(1))
    assert response.status_code == 200
    held = await master.services.config.snapshots(node["node_id"])
    assert (held["limits"].version, held["capabilities"].version) == (7, 1)
    stale = await master.put(node, "capabilities", master.capabilities_body(1))
    assert stale.status_code == 200  # version 1 is a restart, not stale
    assert (await master.put(node, "limits", master.limits_body(6))).status_code == 409


async def test_full_replacement(master, node):
    await master.put(node, "capabilities", master.capabilities_body(1, ["a", "b", "c"]))
    await master.put(node, "capabilities", master.capabilities_body(2, ["d"]))
    held = await master.services.config.snapshots(node["node_id"])
    assert held["capabilities"].snapshot == ["d"]
    await master.put(node, "capabilities", master.capabilities_body(3, []))
    held = await master.services.config.snapshots(node["node_id"])
    assert held["capabilities"].snapshot == []


async def test_unknown_keys_in_config_bodies_are_ignored_and_not_stored(master, node):
    body = master.limits_body(1)
    body["limits"]["future_limit"] = 1
    body["extra"] = {"x": 1}
    assert (await master.put(node, "limits", body)).status_code == 200
    held = await master.services.config.snapshots(node["node_id"])
    assert "future_limit" not in held["limits"].snapshot


async def test_the_sync_gate(master, node):
    config = master.services.config
    with pytest.raises(ServiceUnavailable) as info:
        await config.require_synced(node["node_id"])
    assert (info.value.status, info.value.error_code) == (503, "CONFIG_NOT_SYNCED")
    assert "limits and capabilities" in info.value.message
    await master.put(node, "limits", master.limits_body(1))
    with pytest.raises(ServiceUnavailable) as info:
        await config.require_synced(node["node_id"])
    assert "capabilities" in info.value.message and "limits" not in info.value.message
    with pytest.raises(ServiceUnavailable):
        await _session(master, node)  # no session is pinned before both scopes sync
    await master.put(node, "capabilities", master.capabilities_body(1))
    held = await config.require_synced(node["node_id"])
    assert set(held) == {"limits", "capabilities"}


async def test_sessions_keep_their_pinned_config(master, node):
    await _sync_both(master, node, rate_limit=10)
    session_id = await _session(master, node)
    await master.put(node, "limits", master.limits_body(2, rate_limit=99))
    await master.put(node, "capabilities", master.capabilities_body(2, ["other"]))
    pinned = await master.services.config.pinned_config(session_id)
    assert pinned.limits.rate_limit == 10
    # M-PIN-06/07: the old session may not be asked for "other", and keeps "vision_v1".
    assert pinned.capabilities == ("vision_v1",)
    assert (pinned.limits_version, pinned.capabilities_version) == (1, 1)
    later = await _session(master, node)
    newer = await master.services.config.pinned_config(later)
    assert (newer.limits.rate_limit, newer.capabilities) == (99, ("other",))
    assert (newer.limits_version, newer.capabilities_version) == (2, 2)


async def test_active_sessions_affected_counts_running_and_detached(master, node):
    await _sync_both(master, node)
    await _session(master, node, SessionState.RUNNING)
    await _session(master, node, SessionState.DETACHED)
    await _session(master, node, SessionState.INIT)
    done = await _session(master, node, SessionState.RUNNING)
    await master.services.config.move_session(done, SessionEvent.TERMINATE)
    other = await master.pair("discord:2")
    await _sync_both(master, other)
    await _session(master, other, SessionState.RUNNING)
    response = await master.put(node, "limits", master.limits_body(2))
    assert (await response.get_json())["active_sessions_affected"] == 2


async def test_version_one_with_active_sessions_is_logged_as_restart(master, node, caplog):
    await _sync_both(master, node, limits_version=3)
    await _session(master, node)
    with caplog.at_level(logging.INFO, logger="rawp.master.config"):
        response = await master.put(node, "limits", master.limits_body(1))
    assert response.status_code == 200
    lines = [r.getMessage() for r in caplog.records if "client restart" in r.getMessage()]
    assert len(lines) == 1
    assert node["node_id"] in lines[0] and "limits" in lines[0]


async def test_version_one_without_sessions_is_not_logged_as_restart(master, node, caplog):
    with caplog.at_level(logging.INFO, logger="rawp.master.config"):
        await master.put(node, "limits", master.limits_body(1))
    assert not [r for r in caplog.records if "client restart" in r.getMessage()]


def _legacy_body(**changes):
    body = {
        "rate_limit": 20,
        "max_frame_size": 4096,
        "reattach_window": 60,
        "max_buffer_size": 8192,
        "buffer_overflow_policy": "DROP",
        "capabilities": ["tool_call_v2"],
    }
    body.update(changes)
    return {k: v for k, v in body.items() if v is not ...}


async def test_legacy_endpoint_sets_both_scopes_to_version_one(master, node):
    await _sync_both(master, node, limits_version=4, caps_version=6)
    response = await master.client.post(
        "/v1/nodes/config", json=_legacy_body(), headers=master.bearer(node)
    )
    assert response.status_code == 200
    assert response.headers["Warning"] == LEGACY_WARNING
    held = await master.services.config.snapshots(node["node_id"])
    assert held["limits"].version == held["capabilities"].version == 1
    assert held["limits"].snapshot["rate_limit"] == 20
    assert held["capabilities"].snapshot == ["tool_call_v2"]


async def test_legacy_without_capabilities_declares_none(master, node):
    response = await master.client.post(
        "/v1/nodes/config", json=_legacy_body(capabilities=...), headers=master.bearer(node)
    )
    assert response.status_code == 200
    held = await master.services.config.snapshots(node["node_id"])
    assert held["capabilities"].snapshot == []


@pytest.mark.parametrize(
    ("body", "auth", "status"),
    [
        (_legacy_body(rate_limit=0), True, 422),
        (_legacy_body(rate_limit=...), True, 400),
        (_legacy_body(capabilities=["a", "a"]), True, 422),
        (_legacy_body(), False, 401),
    ],
)
async def test_legacy_warning_is_on_every_response(master, node, body, auth, status):
    headers = master.bearer(node) if auth else {}
    response = await master.client.post("/v1/nodes/config", json=body, headers=headers)
    assert response.status_code == status
    assert response.headers["Warning"] == LEGACY_WARNING
    assert (await response.get_json())["error_code"]


async def test_legacy_warning_even_on_a_wrong_method(master):
    response = await master.client.get("/v1/nodes/config")
    assert response.status_code == 405
    assert response.headers["Warning"] == LEGACY_WARNING


async def test_no_warning_on_the_new_endpoints(master, node):
    response = await master.put(node, "limits", master.limits_body(1))
    assert "Warning" not in response.headers


async def test_racing_updates_leave_the_highest_version(master, node):
    await master.put(node, "limits", master.limits_body(1))
    versions = [4, 2, 6, 3, 5]
    responses = await asyncio.gather(
        *(master.put(node, "limits", master.limits_body(v, rate_limit=v)) for v in versions)
    )
    assert {r.status_code for r in responses} <= {200, 409}
    assert responses[versions.index(6)].status_code == 200  # the newest can never lose
    held = await master.services.config.snapshots(node["node_id"])
    assert (held["limits"].version, held["limits"].snapshot["rate_limit"]) == (6, 6)
