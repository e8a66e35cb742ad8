"""A master that follows the spec but not our conventions (issue 15 §5): it signs its tokens
with a key type of its choosing (EdDSA, ES384, RS256) and puts only the standard `sub` and `exp`
in them. The client pairs with it and syncs its config; a token that does not verify is refused.

The master is a fake at the wire: a small aiohttp server on loopback that speaks the pairing
exchange (§3.3), the refresh (§3.4) and the config PUTs (§4.1), and checks the client's bearer
with its own key, as a real master would.
"""

from __future__ import annotations

import base64
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from joserfc import jwt
from joserfc.jwk import ECKey, OKPKey, RSAKey

from client.link.auth import ClientAuth
from client.link.master import MasterLink, MasterLinkError
from client.settings import ClientSettings
from client.state import StateDir
from rawp.clock import new_id, new_secret
from rawp.config import DEFAULT_LIMITS
from tests.client.test_master_link import rawp
from tests.support import free_port

KEYS = {
    "EdDSA": lambda: OKPKey.generate_key("Ed25519", private=True),
    "ES384": lambda: ECKey.generate_key("P-384", private=True),
    "RS256": lambda: RSAKey.generate_key(2048, private=True),
}


def b64(data: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


@dataclass
class StandardMaster:
    """Signs `{sub, exp}` with `alg`; publishes the public JWK without `kid`, `use` or `alg`."""

    alg: str = "EdDSA"
    key: Any = None
    pairing_token: str = field(default_factory=lambda: new_secret(32))
    node_id: str = field(default_factory=new_id)
    port: int = field(default_factory=free_port)
    puts: list[dict] = field(default_factory=list)
    refresh_token: str = ""
    issued: int = 0
    # What the next token looks like, for the refusal tests: a callable(claims) -> token.
    forge: Any = None
    jwk_override: dict | None = None
    _runner: web.AppRunner | None = None

    def __post_init__(self) -> None:
        self.key = self.key or KEYS[self.alg]()

    @property
    def pairing_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1/auth/pair?token={self.pairing_token}"

    def jwk(self) -> dict:
        return self.jwk_override or self.key.as_dict(private=False)

    def token(self) -> str:
        self.issued += 1  # a later token differs from the last even within one second
        claims = {"sub": self.node_id, "exp": int(time.time()) + 600 + self.issued}
        if self.forge is not None:
            return self.forge(claims)
        return jwt.encode({"alg": self.alg}, claims, self.key, algorithms=[self.alg])

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/v1/auth/pair", self._pair)
        app.router.add_post("/v1/auth/refresh", self._refresh)
        app.router.add_put("/v1/nodes/config/{scope}", self._put)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _pair(self, request: web.Request) -> web.Response:
        body = await request.json()
        if body.get("pairing_token") != self.pairing_token:
            return web.json_response({"error_code": "INVALID_PAIRING_TOKEN", "message": "no"}, 401)
        self.refresh_token = new_secret()
        # §3.3's required fields only: no node_id, no `kind`, a bare JWK.
        return web.json_response(
            {
                "access_token": self.token(),
                "refresh_token": self.refresh_token,
                "expires_in": 600,
                "server_credentials": self.jwk(),
            }
        )

    async def _refresh(self, request: web.Request) -> web.Response:
        body = await request.json()
        if body.get("refresh_token") != self.refresh_token:
            return web.json_response({"error_code": "INVALID_REFRESH_TOKEN", "message": "no"}, 401)
        self.refresh_token = new_secret()
        # §3.4 names no server_credentials in a refresh answer: none is sent.
        return web.json_response(
            {"access_token": self.token(), "refresh_token": self.refresh_token, "expires_in": 600}
        )

    async def _put(self, request: web.Request) -> web.Response:
        token = request.headers.get("Authorization", "").removeprefix("Bearer ")
        try:  # the master checks its own token, as any master would
            claims = jwt.decode(token, self.key, algorithms=[self.alg]).claims
        except Exception:
            return web.json_response({"error_code": "INVALID_TOKEN", "message": "no"}, 401)
        if claims.get("sub") != self.node_id:
            return web.json_response({"error_code": "INVALID_TOKEN", "message": "sub"}, 401)
        body = await request.json()
        self.puts.append({"scope": request.match_info["scope"], **body})
        return web.json_response(
            {
                "config_version": body["config_version"],
                "accepted_at": "2026-01-01T00:00:00Z",
                "active_sessions_affected": 0,
            }
        )


@pytest.fixture
async def standard_master(request):
    fake = StandardMaster(alg=getattr(request, "param", "EdDSA"))
    await fake.start()
    yield fake
    await fake.stop()


async def test_the_real_client_pairs_with_an_eddsa_master_that_uses_only_standard_claims(
    standard_master, tmp_path
):
    state = tmp_path / "state"
    code, out = await rawp(
        "client",
        "pair",
        standard_master.pairing_url,
        "--name",
        "laptop",
        "--dev",
        "--state-dir",
        str(state),
        "--public-address",
        f"http://127.0.0.1:{free_port()}",
    )
    assert code == 0, out
    # C-CFG-01/02: right after pairing the client synced both scopes with the master's token.
    assert sorted(p["scope"] for p in standard_master.puts) == ["capabilities", "limits"]
    saved = json.loads((state / "credentials.json").read_text())
    assert saved["server_credentials"]["kty"] == "OKP"
    assert saved["node_id"] == standard_master.node_id  # from `sub`: the answer had no node_id


async def link_for(master: StandardMaster, tmp_path: Path) -> tuple[MasterLink, StateDir]:
    settings = ClientSettings(state_dir=tmp_path / "state", allowed_roots=[tmp_path], dev=True)
    state = StateDir.open(settings.state_dir)
    return MasterLink(state, settings), state


@pytest.mark.parametrize("standard_master", ["EdDSA", "ES384", "RS256"], indirect=True)
async def test_any_standard_signing_key_is_accepted_and_a_refresh_keeps_it(
    standard_master, tmp_path
):
    link, state = await link_for(standard_master, tmp_path)
    try:
        await link.pair(standard_master.pairing_url, "box", ClientAuth(state, 60).issue())
        first = state.credentials.access_token
        await link.refresh()  # the answer carries no server_credentials
        assert state.credentials.access_token != first
        assert state.credentials.server_credentials == standard_master.jwk()
        # The refreshed token is good at the master: a config change goes through (§4.1).
        await link.change_limits(DEFAULT_LIMITS.model_copy(update={"rate_limit": 10}))
        assert [p["config_version"] for p in standard_master.puts if p["scope"] == "limits"] == [
            1,
            2,
        ]
    finally:
        await link.close()


MASTER_KEY = KEYS["EdDSA"]()
FORGERS = {**KEYS, "ES256": lambda: ECKey.generate_key("P-256", private=True)}


def _other(alg: str):
    """A token signed by a key that is not the master's."""
    return lambda claims: jwt.encode({"alg": alg}, claims, FORGERS[alg](), algorithms=[alg])


REFUSALS = {
    "bad signature": dict(forge=_other("EdDSA")),
    "expired": dict(
        forge=lambda c: jwt.encode(
            {"alg": "EdDSA"}, {**c, "exp": int(time.time()) - 60}, MASTER_KEY, algorithms=["EdDSA"]
        )
    ),
    "alg none": dict(forge=lambda c: f"{b64({'alg': 'none', 'typ': 'JWT'})}.{b64(c)}."),
    "a key type the JWK does not name": dict(forge=_other("ES256")),
    "an alg the JWK does not name": dict(jwk_override="alg RS256"),
    "an HMAC key": dict(jwk_override={"kty": "oct", "k": "c2VjcmV0"}),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
async def test_a_master_token_that_does_not_verify_is_refused(case, tmp_path):
    change = dict(REFUSALS[case])
    fake = StandardMaster(alg="EdDSA", key=MASTER_KEY)
    if change.get("jwk_override") == "alg RS256":  # a JWK naming an alg of another key type
        change["jwk_override"] = {**MASTER_KEY.as_dict(private=False), "alg": "RS256"}
    for name, value in change.items():
        setattr(fake, name, value)
    await fake.start()
    link, state = await link_for(fake, tmp_path)
    try:
        with pytest.raises(MasterLinkError, match="does not verify"):
            await link.pair(fake.pairing_url, "box", ClientAuth(state, 60).issue())
    finally:
        await link.close()
        await fake.stop()
    assert state.credentials.access_token is None  # nothing stored
    assert fake.puts == []  # and nothing sent with it
