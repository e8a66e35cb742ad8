"""Signed bearer tokens (RAWP §3.3–§4, R-37): JWTs signed with an ES256 key.

The master signs the tokens it hands out and publishes the public half as a JWK
(`server_credentials`); the local client does the same for the tokens it gives the master
(`client_credentials`). Whoever receives a token verifies its signature, expiry and kind on
every call (§4). This module only does the cryptography and the claim checks — storage,
revocation and rotation belong to the services that use it.
"""

from __future__ import annotations

import hashlib
from typing import Any

from joserfc import jwt
from joserfc.errors import ExpiredTokenError, JoseError
from joserfc.jwk import ECKey
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
