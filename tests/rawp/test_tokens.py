"""Signed tokens: signature, expiry and kind are checked on every verify (RAWP §3.4, §4)."""

import pytest

from rawp.clock import FakeClock
from rawp.errors import Unauthorized
from rawp.tokens import SigningKey, bearer, fingerprint, verify


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


@pytest.mark.parametrize("mangle", [
    lambda t: t[:-4] + ("AAAA" if not t.endswith("AAAA") else "BBBB"),
    lambda t: "not.a.jwt",
    lambda t: "",
    lambda t: t.split(".")[0] + ".e30.",
])
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
