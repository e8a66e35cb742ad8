"""Signed tokens: signature, expiry and kind are checked on every verify (RAWP §3.4, §4)."""

import pytest
from joserfc import jwt
from joserfc.jwk import ECKey, OKPKey, RSAKey

from rawp.clock import FakeClock
from rawp.errors import Unauthorized
from rawp.tokens import SigningKey, bearer, fingerprint, verify, verify_peer


@pytest.fixture
def key():
    return SigningKey.generate()


def test_sign_and_verify_with_the_published_jwk(key):
    clock = FakeClock()
    token = key.sign({"sub": "node-1"}, 60, kind="access", clock=clock)
    claims = verify(token, key.public_jwk(), kind="access", clock=clock)
    assert claims["sub"] == "node-1"
    assert claims["exp"] - claims["iat"] == 60
    jwk = key.public_jwk()
    assert jwk["kid"] == key.kid and jwk["alg"] == "ES256" and "d" not in jwk


def test_expired_token(key):
    clock = FakeClock()
    token = key.sign({"sub": "n"}, 60, kind="access", clock=clock)
    clock.advance(61)
    with pytest.raises(Unauthorized) as info:
        verify(token, key, kind="access", clock=clock)
    assert info.value.error_code == "TOKEN_EXPIRED"


@pytest.mark.parametrize(
    "mangle",
    [
        lambda t: t[:-4] + ("AAAA" if not t.endswith("AAAA") else "BBBB"),
        lambda t: "not.a.jwt",
        lambda t: "",
        lambda t: t.split(".")[0] + ".e30.",
    ],
)
def test_forged_or_malformed_tokens(key, mangle):
    token = key.sign({"sub": "n"}, 60, kind="access")
    with pytest.raises(Unauthorized) as info:
        verify(mangle(token), key, kind="access")
    assert info.value.error_code == "INVALID_TOKEN"


def test_other_key_and_wrong_kind(key):
    token = key.sign({"sub": "n"}, 60, kind="refresh")
    with pytest.raises(Unauthorized, match="access"):
        verify(token, key, kind="access")
    with pytest.raises(Unauthorized):
        verify(key.sign({"sub": "n"}, 60, kind="access"), SigningKey.generate(), kind="access")
    with pytest.raises(Unauthorized):
        verify(key.sign({}, 60, kind="access"), key, kind="access")  # no sub


def test_key_survives_pem_round_trip(key):
    again = SigningKey.from_pem(key.to_pem())
    assert again.kid == key.kid
    verify(again.sign({"sub": "n"}, 60, kind="access"), key.public_jwk(), kind="access")


def test_bearer_header():
    assert bearer("Bearer abc") == "abc"
    assert bearer("bearer  abc ") == "abc"
    for bad in (None, "", "Basic abc", "Bearer", "Bearer  "):
        with pytest.raises(Unauthorized):
            bearer(bad)


def test_fingerprint_is_stable_and_hides_the_secret():
    assert fingerprint("s") == fingerprint("s") != fingerprint("t")
    assert "secret-value" not in fingerprint("secret-value")
    assert len(fingerprint("x")) == 64


# --- verify_peer: a token the other side signed (issue 15 §5) ---------------------------------


def _peer_token(key, alg: str, claims: dict) -> str:
    return jwt.encode({"alg": alg}, claims, key, algorithms=[alg])


def test_verify_peer_takes_standard_claims_only_and_our_own_tokens_too(key):
    clock = FakeClock()
    exp = int(clock.now().timestamp()) + 60
    ed = OKPKey.generate_key("Ed25519", private=True)
    token = _peer_token(ed, "EdDSA", {"exp": exp})
    claims = verify_peer(token, ed.as_dict(private=False), clock=clock)
    assert claims == {"exp": exp}  # no sub, no kind: not demanded of the other side
    ours = key.sign({"sub": "n"}, 60, kind="node", clock=clock)
    assert verify_peer(ours, key.public_jwk(), clock=clock)["kind"] == "node"
    with pytest.raises(Unauthorized, match="expected a client token"):  # ours stay strict
        verify(ours, key, kind="client", clock=clock)


def test_verify_peer_requires_exp_and_refuses_weak_or_odd_keys():
    ec = ECKey.generate_key("P-256", private=True)
    with pytest.raises(Unauthorized):
        verify_peer(_peer_token(ec, "ES256", {"sub": "n"}), ec.as_dict(private=False))
    small = RSAKey.generate_key(1024, private=True, auto_kid=False)
    token = _peer_token(small, "RS256", {"exp": 2**40})
    with pytest.raises(Unauthorized, match="2048"):
        verify_peer(token, small.as_dict(private=False))
    enc = {**ec.as_dict(private=False), "use": "enc"}
    with pytest.raises(Unauthorized, match="signing"):
        verify_peer(_peer_token(ec, "ES256", {"exp": 2**40}), enc)
    for jwk in ({"kty": "oct", "k": "c2VjcmV0"}, {"kty": "EC", "crv": "secp256k1"}, [], {}):
        with pytest.raises(Unauthorized):
            verify_peer(_peer_token(ec, "ES256", {"exp": 2**40}), jwk)
