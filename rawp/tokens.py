"""Signed bearer tokens (RAWP §3.3–§4, R-37): JWTs signed with an ES256 key.

The master signs the tokens it hands out and publishes the public half as a JWK
(`server_credentials`); the local client does the same for the tokens it gives the master
(`client_credentials`). Whoever receives a token verifies its signature, expiry and kind on
every call (§4). This module only does the cryptography and the claim checks — storage,
revocation and rotation belong to the services that use it.

Strict where it should be, tolerant where the spec is open (issue 15 §5):

- `verify` checks tokens this implementation signed itself: ES256 with our own key, and our
  private `kind` claim, so a token of one kind never passes as another.
- `verify_peer` checks a token the OTHER side signed with a key it published as a JWK (the
  master's `server_credentials`, §3.3). The spec names no key type and no claims, so any
  standard JWS signing key is taken — EC P-256/P-384/P-521 (ES256/384/512), Ed25519
  (EdDSA), RSA ≥ 2048 bits (RS*/PS*) — but only with an algorithm that key type (and the JWK's
  `alg`, when it names one) allows: never `none`, never an HMAC, never an algorithm of another
  key type. Only the standard `exp` is required; `sub`, `kind` and the rest are not demanded.
"""

from __future__ import annotations

import hashlib
from typing import Any

from joserfc import jwt
from joserfc.errors import ExpiredTokenError, JoseError
from joserfc.jwk import ECKey, OKPKey, RSAKey
from joserfc.jwt import JWTClaimsRegistry

from rawp.clock import SYSTEM_CLOCK, Clock, new_id
from rawp.errors import Unauthorized

ALGORITHM = "ES256"


class SigningKey:
    """An ES256 key pair. Persist it with `to_pem()`; publish `public_jwk()`."""

    def __init__(self, key: ECKey) -> None:
        self._key = key
        self.kid: str = key.thumbprint()

    @classmethod
    def generate(cls) -> SigningKey:
        return cls(ECKey.generate_key("P-256", private=True))

    @classmethod
    def from_pem(cls, pem: bytes | str) -> SigningKey:
        return cls(ECKey.import_key(pem.encode() if isinstance(pem, str) else pem))

    def to_pem(self) -> bytes:
        """The private key in PKCS#8 PEM: store it with file mode 0600, never log it."""
        return self._key.as_pem(private=True)

    def public_jwk(self) -> dict[str, Any]:
        """The public half as a JWK, with `kid`, `alg` and `use` (§3.3 `server_credentials`)."""
        jwk = self._key.as_dict(private=False)
        return {**jwk, "kid": self.kid, "alg": ALGORITHM, "use": "sig"}

    def sign(
        self,
        claims: dict[str, Any],
        ttl_seconds: int,
        *,
        kind: str,
        clock: Clock = SYSTEM_CLOCK,
    ) -> str:
        """A JWT carrying `claims` plus `iat`, `exp`, `jti` and the token `kind`."""
        now = int(clock.now().timestamp())
        body = {**claims, "kind": kind, "iat": now, "exp": now + ttl_seconds, "jti": new_id()}
        return jwt.encode({"alg": ALGORITHM, "kid": self.kid}, body, self._key)


def verify(
    token: str,
    public_jwk: dict[str, Any] | SigningKey,
    *,
    kind: str,
    clock: Clock = SYSTEM_CLOCK,
    required: tuple[str, ...] = ("sub",),
) -> dict[str, Any]:
    """Check signature, expiry and kind; return the claims or raise `Unauthorized` (§7.1).

    `TOKEN_EXPIRED` for an expired token (the caller refreshes and retries, §3.4), and
    `INVALID_TOKEN` for everything else — a forged, malformed or wrong-kind token.
    """
    key = public_jwk._key if isinstance(public_jwk, SigningKey) else _import_public(public_jwk)
    try:
        decoded = jwt.decode(token, key, algorithms=[ALGORITHM])
        registry = JWTClaimsRegistry(
            now=int(clock.now().timestamp()),
            exp={"essential": True},
            **{name: {"essential": True} for name in required},
        )
        registry.validate(decoded.claims)
    except ExpiredTokenError:
        raise Unauthorized("the token has expired; refresh it", "TOKEN_EXPIRED") from None
    except (JoseError, ValueError, TypeError):
        raise Unauthorized("the token is not valid", "INVALID_TOKEN") from None
    claims = decoded.claims
    if claims.get("kind") != kind:
        raise Unauthorized(f"expected a {kind} token", "INVALID_TOKEN")
    return claims


# (kty, crv) -> the JWS algorithms a key of that type signs with (RFC 7518 §3.1, RFC 8037,
# RFC 9864 for the fully specified "Ed25519").
PEER_ALGORITHMS: dict[tuple[str, str | None], frozenset[str]] = {
    ("EC", "P-256"): frozenset({"ES256"}),
    ("EC", "P-384"): frozenset({"ES384"}),
    ("EC", "P-521"): frozenset({"ES512"}),
    ("OKP", "Ed25519"): frozenset({"EdDSA", "Ed25519"}),
    ("RSA", None): frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"}),
}
_PUBLIC_FIELDS = {
    "EC": ("kty", "crv", "x", "y"),
    "OKP": ("kty", "crv", "x"),
    "RSA": ("kty", "n", "e"),
}
_KEY_TYPES = {"EC": ECKey, "OKP": OKPKey, "RSA": RSAKey}
MIN_RSA_BITS = 2048


def verify_peer(
    token: str, public_jwk: dict[str, Any], *, clock: Clock = SYSTEM_CLOCK
) -> dict[str, Any]:
    """Check a token the other side signed (module rule 2); return its claims or raise.

    `TOKEN_EXPIRED` for an expired token, `INVALID_TOKEN` for anything else."""
    key, algorithms = _peer_key(public_jwk)
    try:
        decoded = jwt.decode(token, key, algorithms=sorted(algorithms))
        registry = JWTClaimsRegistry(now=int(clock.now().timestamp()), exp={"essential": True})
        registry.validate(decoded.claims)
    except ExpiredTokenError:
        raise Unauthorized("the token has expired; refresh it", "TOKEN_EXPIRED") from None
    except (JoseError, ValueError, TypeError):
        raise Unauthorized("the token is not valid", "INVALID_TOKEN") from None
    return decoded.claims


def _peer_key(jwk: Any) -> tuple[Any, frozenset[str]]:
    """The public key of a peer's JWK and the algorithms it may sign with, or `Unauthorized`."""
    if not isinstance(jwk, dict) or not isinstance(jwk.get("kty"), str):
        raise Unauthorized("the signing key is not a JWK", "INVALID_TOKEN")
    kty = jwk["kty"]
    algorithms = PEER_ALGORITHMS.get((kty, None if kty == "RSA" else jwk.get("crv")))
    if algorithms is None:
        raise Unauthorized(
            f"the signing key type {kty}/{jwk.get('crv')} is not one for JWS signatures",
            "INVALID_TOKEN",
        )
    named = jwk.get("alg")
    if named is not None:
        if named not in algorithms:
            raise Unauthorized(
                f"the JWK names {named!r}, not an algorithm of its key type", "INVALID_TOKEN"
            )
        algorithms = frozenset({named})
    if jwk.get("use") not in (None, "sig"):
        raise Unauthorized("the JWK is not a signing key (use)", "INVALID_TOKEN")
    try:
        key = _KEY_TYPES[kty].import_key({k: jwk[k] for k in _PUBLIC_FIELDS[kty] if k in jwk})
    except (JoseError, ValueError, TypeError, KeyError):
        raise Unauthorized("the signing key is not a valid JWK", "INVALID_TOKEN") from None
    if kty == "RSA" and key.raw_value.key_size < MIN_RSA_BITS:
        raise Unauthorized(f"an RSA signing key needs {MIN_RSA_BITS} bits", "INVALID_TOKEN")
    return key, algorithms


def _import_public(jwk: dict[str, Any]) -> ECKey:
    try:
        return ECKey.import_key({k: v for k, v in jwk.items() if k in ("kty", "crv", "x", "y")})
    except (JoseError, ValueError, TypeError, KeyError):
        raise Unauthorized("the signing key is not a valid EC JWK", "INVALID_TOKEN") from None


def bearer(header: str | None) -> str:
    """The token of an `Authorization: Bearer …` header, or `Unauthorized`."""
    if not header:
        raise Unauthorized("an Authorization: Bearer token is required", "TOKEN_MISSING")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("the Authorization header must be 'Bearer <token>'", "TOKEN_MISSING")
    return token.strip()


def fingerprint(secret: str) -> str:
    """SHA-256 of an opaque secret (refresh token, ticket) — store this, never the secret."""
    return hashlib.sha256(secret.encode()).hexdigest()
