"""JWTs from a configured OIDC issuer are user tokens too (§9.1): checked against the issuer's
JWKS, served here by a fake identity provider on loopback."""

from __future__ import annotations

import time

import pytest
from aiohttp import web
from joserfc import jwt
from joserfc.jwk import ECKey, KeySet

from tests.support import free_port

ISSUER = "https://id.example"
AUDIENCE = "rawp-master"


class FakeIdentityProvider:
    def __init__(self) -> None:
        self.keys = [ECKey.generate_key("P-256", private=True, parameters={"kid": "k1"})]
        self.fetches = 0
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/jwks.json"

    async def jwks(self, request: web.Request) -> web.Response:
        self.fetches += 1
        return web.json_response(KeySet(self.keys).as_dict(private=False))

    def token(self, key_index: int = 0, **claims) -> str:
        now = int(time.time())
        body = {"iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "iat": now, "exp": now + 300}
        body.update(claims)
        key = self.keys[key_index]
        return jwt.encode({"alg": "ES256", "kid": key.kid}, body, key)

    def rotate(self) -> None:
        self.keys.append(ECKey.generate_key("P-256", private=True, parameters={"kid": "k2"}))


@pytest.fixture
async def idp():
    provider = FakeIdentityProvider()
    app = web.Application()
    app.router.add_get("/jwks.json", provider.jwks)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", provider.port).start()
    yield provider
    await runner.cleanup()


@pytest.fixture
async def oidc_master(make_edge_master, idp):
    async with make_edge_master(
        oidc_issuer=ISSUER,
        oidc_jwks_url=idp.url,
        oidc_audience=AUDIENCE,
        oidc_min_refetch_seconds=0,
    ) as master:
        yield master


async def test_an_issuers_token_is_a_user_token(oidc_master, idp, fake_client):
    status, listed = await oidc_master.call(idp.token(), "GET", "/v1/edge/nodes")
    assert (status, listed) == (200, {"nodes": []})
    # The OIDC user is `oidc:<sub>` and owns what it pairs.
    status, pairing = await oidc_master.call(idp.token(), "POST", "/v1/edge/pairing-urls")
    assert status == 201
    token = pairing["pairing_url"].split("token=", 1)[1]
    row = await _pairing_owner(oidc_master, token)
    assert row == "oidc:alice"
    assert idp.fetches == 1  # the key set is cached


async def test_foreign_expired_and_misaddressed_tokens_are_refused(oidc_master, idp):
    stranger = ECKey.generate_key("P-256", private=True, parameters={"kid": "k1"})
    forged = jwt.encode(
        {"alg": "ES256", "kid": "k1"},
        {"iss": ISSUER, "aud": AUDIENCE, "sub": "mallory", "exp": int(time.time()) + 60},
        stranger,
    )
    for token, code in (
        (forged, "INVALID_TOKEN"),
        (idp.token(aud="someone-else"), "INVALID_TOKEN"),
        (idp.token(iss="https://evil.example"), "INVALID_TOKEN"),
        (idp.token(exp=int(time.time()) - 3600), "TOKEN_EXPIRED"),
        ("not.a.jwt", "INVALID_TOKEN"),
    ):
        status, answer = await oidc_master.call(token, "GET", "/v1/edge/nodes")
        assert status == 401, token
        assert answer["error_code"] == code


async def test_a_rotated_key_is_fetched_once(oidc_master, idp):
    assert (await oidc_master.call(idp.token(), "GET", "/v1/edge/nodes"))[0] == 200
    idp.rotate()
    status, _ = await oidc_master.call(idp.token(key_index=1), "GET", "/v1/edge/nodes")
    assert status == 200
    assert idp.fetches == 2
    # A token naming a kid the issuer never had costs one more fetch, then fails.
    stranger = ECKey.generate_key("P-256", private=True, parameters={"kid": "k9"})
    forged = jwt.encode(
        {"alg": "ES256", "kid": "k9"},
        {"iss": ISSUER, "aud": AUDIENCE, "sub": "x", "exp": int(time.time()) + 60},
        stranger,
    )
    status, answer = await oidc_master.call(forged, "GET", "/v1/edge/nodes")
    assert status == 401 and answer["error_code"] == "INVALID_TOKEN"


async def _pairing_owner(master, token: str) -> str:
    from master.storage import nodes as store
    from rawp.tokens import fingerprint

    async with master.services.db.connect() as conn:
        row = await store.pairing_token(conn, fingerprint(token))
    return row.user_id
