"""Pairing (§3.1–§3.3): tokens, client_address rules (§3.2, K-01), the pair response."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import select

from master.services.addresses import AddressPolicy
from master.storage.schema import nodes, pairing_tokens
from rawp.errors import BadRequest
from rawp.tokens import fingerprint, verify


async def test_pair_returns_tokens_jwk_and_node_id(master):
    token = await master.pairing_token("discord:42")
    assert len(token) >= 32
    response = await master.client.post("/v1/auth/pair", json=master.pair_body(token))
    assert response.status_code == 200
    body = await response.get_json()
    assert {"access_token", "refresh_token", "expires_in", "server_credentials", "node_id"} <= set(
        body
    )
    assert body["expires_in"] == master.services.settings.access_token_ttl
    assert body["server_credentials"]["kty"] == "EC"
    assert "d" not in body["server_credentials"]  # the public half only
    claims = verify(
        body["access_token"], body["server_credentials"], kind="node", clock=master.clock
    )
    assert claims["sub"] == body["node_id"]


async def test_node_belongs_to_the_token_user_and_stores_client_credentials(master):
    body = await master.pair("slack:T1:U2", address="https://192.168.1.20:8701")
    async with master.services.db.connect() as conn:
        row = (await conn.execute(select(nodes).where(nodes.c.id == body["node_id"]))).one()
    assert row.user_id == "slack:T1:U2"
    assert row.client_address == "https://192.168.1.20:8701"  # private ranges are fine (§3.2)
    assert row.client_access_token == "client-access"
    assert row.client_refresh_token == "client-refresh"
    assert row.device_name == "laptop"


async def test_pairing_tokens_are_stored_as_fingerprints(master):
    token = await master.pairing_token()
    async with master.services.db.connect() as conn:
        stored = list((await conn.execute(select(pairing_tokens.c.fingerprint))).scalars())
    assert stored == [fingerprint(token)]
    assert token not in stored


async def test_pairing_url_form(master):
    ticket = await master.services.pairing.issue("discord:1")
    assert ticket.url == f"https://master.example/v1/auth/pair?token={ticket.token}"


async def test_pairing_token_used_twice_is_refused(master):
    token = await master.pairing_token()
    first = await master.client.post("/v1/auth/pair", json=master.pair_body(token))
    assert first.status_code == 200
    second = await master.client.post("/v1/auth/pair", json=master.pair_body(token))
    assert second.status_code == 401
    assert (await second.get_json())["error_code"] == "PAIRING_TOKEN_USED"


async def test_expired_pairing_token_is_refused(master):
    token = await master.pairing_token()
    master.clock.advance(15 * 60 - 1)
    still = await master.pairing_token()  # issued later, still fresh at the end
    master.clock.advance(1)
    response = await master.client.post("/v1/auth/pair", json=master.pair_body(token))
    assert response.status_code == 401
    assert (await response.get_json())["error_code"] == "PAIRING_TOKEN_EXPIRED"
    ok = await master.client.post("/v1/auth/pair", json=master.pair_body(still))
    assert ok.status_code == 200


async def test_expired_unused_tokens_are_discarded(master):
    old = await master.pairing_token()
    master.clock.advance(15 * 60)
    await master.pairing_token()
    async with master.services.db.connect() as conn:
        stored = set((await conn.execute(select(pairing_tokens.c.fingerprint))).scalars())
    assert fingerprint(old) not in stored
    assert len(stored) == 1


async def test_unknown_pairing_token_is_refused(master):
    response = await master.client.post("/v1/auth/pair", json=master.pair_body("x" * 43))
    assert response.status_code == 401
    assert (await response.get_json())["error_code"] == "INVALID_PAIRING_TOKEN"


async def test_get_on_the_pairing_url_explains_and_does_not_burn_the_token(master):
    ticket = await master.services.pairing.issue("discord:1")
    response = await master.client.get(f"/v1/auth/pair?token={ticket.token}")
    assert response.status_code == 200
    note = await response.get_json()
    assert "rawp client pair" in note["message"]
    assert note["command"] == f"rawp client pair '{ticket.url}'"
    ok = await master.client.post("/v1/auth/pair", json=master.pair_body(ticket.token))
    assert ok.status_code == 200


REFUSED_ALWAYS = [
    "https://169.254.10.1:8701",  # link-local IPv4
    "https://[fe80::1]:8701",  # link-local IPv6
    "https://0.0.0.0:8701",
    "https://[::]:8701",
    "ftp://node.example",
    "node.example:8701",
    "https://",
    "https://user:pw@node.example",
    "https://node.example/some/path",
]
LOOPBACK = [
    "https://127.0.0.1:8701",
    "https://127.8.9.10",
    "https://localhost:8701",
    "https://LOCALHOST.",
    "https://[::1]:8701",
    "https://[::ffff:127.0.0.1]:8701",
]


@pytest.mark.parametrize("address", REFUSED_ALWAYS + LOOPBACK + ["http://node.example:8701"])
def test_refused_addresses_without_dev(address):
    with pytest.raises(BadRequest) as info:
        AddressPolicy(dev=False).normalize(address)
    assert info.value.error_code == "INVALID_CLIENT_ADDRESS"


@pytest.mark.parametrize("address", [*LOOPBACK, "http://127.0.0.1:8701", "http://node.example"])
def test_dev_allows_http_and_loopback(address):
    assert AddressPolicy(dev=True).normalize(address).startswith(("http://", "https://"))


@pytest.mark.parametrize("address", REFUSED_ALWAYS)
def test_dev_still_refuses_link_local_and_malformed(address):
    with pytest.raises(BadRequest):
        AddressPolicy(dev=True).normalize(address)


@pytest.mark.parametrize(
    ("address", "normalized"),
    [
        ("https://Node.Example:8701/", "https://node.example:8701"),
        ("https://10.0.0.5", "https://10.0.0.5"),
        ("https://172.16.3.4:443", "https://172.16.3.4:443"),
        ("https://192.168.1.20:8701", "https://192.168.1.20:8701"),
        ("https://[FD00::5]:8701", "https://[fd00::5]:8701"),
    ],
)
def test_private_and_public_addresses_are_accepted(address, normalized):
    assert AddressPolicy(dev=False).normalize(address) == normalized


async def test_refused_address_over_http_keeps_the_token(master):
    token = await master.pairing_token()
    for address in ("https://127.0.0.1:8701", "https://169.254.1.1", "http://node.example"):
        response = await master.client.post("/v1/auth/pair", json=master.pair_body(token, address))
        assert response.status_code == 400, address
        assert (await response.get_json())["error_code"] == "INVALID_CLIENT_ADDRESS"
    # The refused addresses did not cost the token: a corrected request succeeds.
    fixed = await master.client.post("/v1/auth/pair", json=master.pair_body(token))
    assert fixed.status_code == 200


async def test_dev_master_pairs_loopback_and_http_but_not_link_local(make_master):
    async with make_master(dev=True) as master:
        for address in ("http://127.0.0.1:8701", "https://localhost:8701", "http://[::1]:1"):
            assert (await master.pair(address=address))["node_id"]
        token = await master.pairing_token()
        link_local = master.pair_body(token, "http://169.254.0.9:8701")
        response = await master.client.post("/v1/auth/pair", json=link_local)
        assert response.status_code == 400


BAD_CHANGES = [
    {"device_name": ""},
    {"device_name": "x" * 101},
    {"device_name": 7},
    {"client_credentials": {"access_token": "a", "refresh_token": "r"}},
    {"client_credentials": {"access_token": "a", "refresh_token": "r", "expires_in": "60"}},
    {"client_credentials": {"access_token": "a", "refresh_token": "r", "expires_in": 0}},
    {"client_credentials": "not an object"},
    {"client_address": None},
    {"pairing_token": ["list"]},
]


async def test_bad_pair_bodies_are_400(master):
    token = await master.pairing_token()
    for change in BAD_CHANGES:
        body = {**master.pair_body(token), **change}
        response = await master.client.post("/v1/auth/pair", json=body)
        assert response.status_code == 400, change
        result = await response.get_json()
        assert result["error_code"] == "INVALID_REQUEST", change
        assert result["message"]
    # None of them used the token up.
    ok = await master.client.post("/v1/auth/pair", json=master.pair_body(token))
    assert ok.status_code == 200


async def test_missing_fields_are_named(master):
    response = await master.client.post("/v1/auth/pair", json={"pairing_token": "t"})
    body = await response.get_json()
    assert response.status_code == 400
    for name in ("client_address", "device_name", "client_credentials"):
        assert name in body["message"]


async def test_unknown_keys_are_ignored(master):
    token = await master.pairing_token()
    body = master.pair_body(token, future_field={"x": 1})
    body["client_credentials"]["also_new"] = True
    response = await master.client.post("/v1/auth/pair", json=body)
    assert response.status_code == 200


@given(st.text(max_size=60), st.booleans())
def test_any_address_text_is_accepted_normalized_or_refused_cleanly(text, dev):
    try:
        normalized = AddressPolicy(dev=dev).normalize(text)
    except BadRequest as exc:
        assert exc.error_code == "INVALID_CLIENT_ADDRESS"
        return
    assert normalized.startswith("https://" if not dev else ("https://", "http://"))
    assert AddressPolicy(dev=dev).normalize(normalized) == normalized  # idempotent


octet = st.integers(min_value=0, max_value=255)


@given(st.sampled_from(["127", "169.254"]), st.lists(octet, min_size=3, max_size=3))
def test_loopback_and_link_local_ranges_are_always_refused(prefix, octets):
    host = ".".join([prefix, *map(str, octets)][: 4 if prefix == "127" else 3])
    with pytest.raises(BadRequest):
        AddressPolicy(dev=False).normalize(f"https://{host}:8701")


async def test_racing_pairs_with_one_token_create_one_node(master):
    token = await master.pairing_token()
    responses = await asyncio.gather(
        *(master.client.post("/v1/auth/pair", json=master.pair_body(token)) for _ in range(4))
    )
    assert sorted(r.status_code for r in responses) == [200, 401, 401, 401]
    async with master.services.db.connect() as conn:
        assert len((await conn.execute(select(nodes.c.id))).all()) == 1
