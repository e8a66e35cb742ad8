"""Master tokens (§3.4): expiry, refresh with rotation, revocation, unregistration (§3.5)."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select

from master.storage.config import get_session
from master.storage.db import utc
from master.storage.schema import nodes, refresh_tokens
from rawp.session_state import SessionState
from rawp.tokens import SigningKey, fingerprint


async def _limits(master, node, version=1):
    return await master.put(node, "limits", master.limits_body(version))


async def test_access_token_works_until_it_expires(master):
    node = await master.pair()
    assert (await _limits(master, node)).status_code == 200
    master.clock.advance(master.services.settings.access_token_ttl + 1)
    response = await _limits(master, node, 2)
    assert response.status_code == 401
    assert (await response.get_json())["error_code"] == "TOKEN_EXPIRED"


async def test_refresh_rotates_and_the_new_access_token_works(master):
    node = await master.pair()
    master.clock.advance(master.services.settings.access_token_ttl + 1)
    response = await master.client.post(
        "/v1/auth/refresh", json={"refresh_token": node["refresh_token"]}
    )
    assert response.status_code == 200
    fresh = await response.get_json()
    assert {"access_token", "refresh_token", "expires_in", "server_credentials"} <= set(fresh)
    assert fresh["refresh_token"] != node["refresh_token"]
    assert fresh["node_id"] == node["node_id"]
    assert (await _limits(master, fresh)).status_code == 200
    again = await master.client.post(
        "/v1/auth/refresh", json={"refresh_token": node["refresh_token"]}
    )
    assert again.status_code == 401  # the old refresh token died on use
    newest = await master.client.post(
        "/v1/auth/refresh", json={"refresh_token": fresh["refresh_token"]}
    )
    assert newest.status_code == 200


async def test_refresh_tokens_are_stored_as_fingerprints(master):
    node = await master.pair()
    async with master.services.db.connect() as conn:
        stored = list((await conn.execute(select(refresh_tokens.c.fingerprint))).scalars())
    assert stored == [fingerprint(node["refresh_token"])]


async def test_expired_refresh_token(master):
    node = await master.pair()
    master.clock.advance(master.services.settings.refresh_token_ttl)
    response = await master.client.post(
        "/v1/auth/refresh", json={"refresh_token": node["refresh_token"]}
    )
    assert response.status_code == 401
    assert (await response.get_json())["error_code"] == "TOKEN_EXPIRED"


async def test_unknown_and_malformed_refresh(master):
    unknown = await master.client.post("/v1/auth/refresh", json={"refresh_token": "nope"})
    assert unknown.status_code == 401
    assert (await unknown.get_json())["error_code"] == "INVALID_TOKEN"
    wrong_type = await master.client.post("/v1/auth/refresh", json={"refresh_token": 5})
    assert wrong_type.status_code == 400
    missing = await master.client.post("/v1/auth/refresh", json={})
    assert missing.status_code == 400


async def test_forged_and_missing_tokens(master):
    node = await master.pair()
    body = master.limits_body()
    forged = SigningKey.generate().sign({"sub": node["node_id"]}, 600, kind="node")
    for headers, code in [
        ({}, "TOKEN_MISSING"),
        ({"Authorization": "Basic abc"}, "TOKEN_MISSING"),
        ({"Authorization": f"Bearer {forged}"}, "INVALID_TOKEN"),
        ({"Authorization": "Bearer not.a.jwt"}, "INVALID_TOKEN"),
        ({"Authorization": f"Bearer {node['refresh_token']}"}, "INVALID_TOKEN"),
    ]:
        response = await master.client.put("/v1/nodes/config/limits", json=body, headers=headers)
        assert response.status_code == 401, headers
        assert (await response.get_json())["error_code"] == code


async def test_a_token_of_another_kind_is_refused(master):
    node = await master.pair()
    other_kind = master.services.key.sign({"sub": node["node_id"]}, 600, kind="edge")
    response = await master.client.put(
        "/v1/nodes/config/limits",
        json=master.limits_body(),
        headers={"Authorization": f"Bearer {other_kind}"},
    )
    assert response.status_code == 401


async def test_unregister_revokes_every_token_and_closes_sockets(master):
    node = await master.pair()
    await master.put(node, "limits", master.limits_body(1))
    await master.put(node, "capabilities", master.capabilities_body(1))
    refreshed = await (
        await master.client.post("/v1/auth/refresh", json={"refresh_token": node["refresh_token"]})
    ).get_json()
    session_id = "5f1c2a9e-7b4d-4e21-9a57-1c0d2b3e4f50"
    await master.services.config.pin_session(
        session_id=session_id,
        node_id=node["node_id"],
        user_id="discord:1",
        agent_name="demo",
        workspace_path="/w",
    )
    closed: list[str] = []

    async def closer(name):
        closed.append(name)

    sockets = master.services.sockets
    sockets.register(node["node_id"], lambda: closer("client ws"))
    sockets.register(node["node_id"], lambda: closer("edge ws"))
    gone = sockets.register(node["node_id"], lambda: closer("already ended"))
    gone()
    other = await master.pair("discord:2")
    sockets.register(other["node_id"], lambda: closer("other node"))

    response = await master.client.delete("/v1/nodes/self", headers=master.bearer(refreshed))
    assert response.status_code == 204
    assert await response.get_data() == b""
    assert sorted(closed) == ["client ws", "edge ws"]
    assert sockets.count(node["node_id"]) == 0 and sockets.count(other["node_id"]) == 1

    # Every token the node ever held is dead at once, though the JWTs have not expired.
    for token in (node["access_token"], refreshed["access_token"]):
        response = await master.client.put(
            "/v1/nodes/config/limits",
            json=master.limits_body(5),
            headers={"Authorization": f"Bearer {token}"},
        )
        assert response.status_code == 401
        assert (await response.get_json())["error_code"] == "TOKEN_REVOKED"
    refresh = await master.client.post(
        "/v1/auth/refresh", json={"refresh_token": refreshed["refresh_token"]}
    )
    assert refresh.status_code == 401
    assert (await refresh.get_json())["error_code"] == "TOKEN_REVOKED"
    again = await master.client.delete("/v1/nodes/self", headers=master.bearer(refreshed))
    assert again.status_code == 401

    async with master.services.db.connect() as conn:
        row = (await conn.execute(select(nodes).where(nodes.c.id == node["node_id"]))).one()
    assert row.status == "unregistered"
    assert row.client_access_token is None and row.client_refresh_token is None
    pinned_session = await master.services.config.pinned_config(session_id)
    assert pinned_session.limits_version == 1
    async with master.services.db.connect() as conn:
        assert (await get_session(conn, session_id)).status == SessionState.TERMINATED.value
    # The other node is untouched.
    assert (await master.put(other, "limits", master.limits_body(1))).status_code == 200


async def test_authenticated_calls_record_when_the_node_was_last_seen(master):
    node = await master.pair()
    paired_at = master.clock.now()
    master.clock.advance(30)
    await master.put(node, "limits", master.limits_body(1))
    master.clock.advance(60)
    await master.put(node, "limits", master.limits_body(2))
    async with master.services.db.connect() as conn:
        seen = (await conn.execute(select(nodes.c.last_seen_at))).scalar_one()
    assert utc(seen) == paired_at + timedelta(seconds=90)
