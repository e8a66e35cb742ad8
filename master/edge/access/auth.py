"""Edge users (RAWP §9.1, E-AUTH-01/02): separate from pairing, checked on every call.

Two ways to be a user:

1. A gateway holding the edge service credential (`RAWP_EDGE_SECRET`, compared in constant
   time) asks `POST /v1/edge/auth/token` for a short-lived user token for the platform user it
   acts for (`discord:<id>`, `slack:<team>:<id>`). The token is an ES256 JWT signed by the
   master's key with its own `kind: "user"`, so a node token can never pass as a user token.
2. When an OIDC issuer is configured, its JWTs are accepted too: signature against the
   issuer's JWKS (fetched with aiohttp, cached, fetched again once for an unknown `kid`),
   `iss`, `aud` and `exp` checked. Such a user is `oidc:<sub>`.

A subject from the edge credential may not start with `oidc:`: the two spaces never overlap.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import re
from dataclasses import dataclass
from typing import Any

from joserfc import jwt
from joserfc.errors import ExpiredTokenError, InvalidKeyIdError, JoseError
from joserfc.jwk import KeySet
from joserfc.jwt import JWTClaimsRegistry

from master.settings import EdgeSettings
from rawp.clock import Clock
from rawp.errors import BadRequest, ServiceUnavailable, Unauthorized
from rawp.rest import EdgeTokenGrant
from rawp.tokens import SigningKey, bearer, verify
from runtime.settings import plain

log = logging.getLogger("rawp.master.edge.auth")

USER_TOKEN_KIND = "user"
OIDC_PREFIX = "oidc:"
# `platform:id[:id…]`: a lower-case platform name, then 1–190 printable characters.
SUBJECT = re.compile(r"^[a-z][a-z0-9_-]{0,30}:[!-~]{1,190}$")
OIDC_ALGORITHMS = ["RS256", "ES256", "PS256", "EdDSA"]


@dataclass(frozen=True)
class EdgeUser:
    id: str


class EdgeAuth:
    def __init__(self, key: SigningKey, clock: Clock, settings: EdgeSettings) -> None:
        self._key = key
        self._clock = clock
        self._settings = settings
        self._oidc = OidcVerifier(settings, clock) if settings.oidc_issuer else None

    def issue(self, authorization: str | None, subject: Any) -> dict[str, Any]:
        """`POST /v1/edge/auth/token`: a user token for `subject`, for holders of the secret."""
        secret = plain(self._settings.secret)
        if not secret:
            raise ServiceUnavailable(
                "no edge service credential is configured (RAWP_EDGE_SECRET)",
                "EDGE_AUTH_NOT_CONFIGURED",
            )
        presented = bearer(authorization)
        if not hmac.compare_digest(presented.encode(), secret.encode()):
            raise Unauthorized("the edge service credential is not valid", "INVALID_TOKEN")
        if (
            not isinstance(subject, str)
            or not SUBJECT.match(subject)
            or subject.startswith(OIDC_PREFIX)
        ):
            raise BadRequest(
                "subject must look like 'platform:id' (e.g. discord:123, slack:T1:U2) "
                "and must not start with 'oidc:'",
                "INVALID_SUBJECT",
            )
        ttl = self._settings.user_token_ttl
        token = self._key.sign({"sub": subject}, ttl, kind=USER_TOKEN_KIND, clock=self._clock)
        return EdgeTokenGrant(access_token=token, expires_in=ttl).wire()

    async def authenticate(self, authorization: str | None) -> EdgeUser:
        """The user behind `Authorization: Bearer <user token>`, or 401 (E-AUTH-02)."""
        token = bearer(authorization)
        try:
            claims = verify(token, self._key, kind=USER_TOKEN_KIND, clock=self._clock)
        except Unauthorized as own_error:
            if self._oidc is None or own_error.error_code == "TOKEN_EXPIRED":
                raise
            return EdgeUser(OIDC_PREFIX + await self._oidc.subject(token))
        return EdgeUser(str(claims["sub"]))


class OidcVerifier:
    """JWTs of one configured issuer, checked against its JWKS (cached)."""

    def __init__(self, settings: EdgeSettings, clock: Clock) -> None:
        if not (settings.oidc_jwks_url and settings.oidc_audience):
            raise ValueError("an OIDC issuer needs its JWKS URL and audience as well")
        self._settings = settings
        self._clock = clock
        self._keys: KeySet | None = None
        self._fetched_at = float("-inf")
        self._lock = asyncio.Lock()

    async def subject(self, token: str) -> str:
        keys = await self._key_set(force=False)
        try:
            decoded = jwt.decode(token, keys, algorithms=OIDC_ALGORITHMS)
        except InvalidKeyIdError:
            # An unknown kid: the issuer may have rotated its keys; fetch once more.
            keys = await self._key_set(force=True)
            decoded = self._decode(token, keys)
        except ExpiredTokenError:
            raise Unauthorized("the token has expired", "TOKEN_EXPIRED") from None
        except (JoseError, TypeError):
            raise Unauthorized("the token is not valid", "INVALID_TOKEN") from None
        claims = decoded.claims
        registry = JWTClaimsRegistry(
            now=int(self._clock.now().timestamp()),
            leeway=30,
            exp={"essential": True},
            sub={"essential": True},
            iss={"essential": True, "value": self._settings.oidc_issuer},
            aud={"essential": True, "value": self._settings.oidc_audience},
        )
        try:
            registry.validate(claims)
        except ExpiredTokenError:
            raise Unauthorized("the token has expired", "TOKEN_EXPIRED") from None
        except (JoseError, ValueError, TypeError):
            raise Unauthorized("the token is not valid for this master", "INVALID_TOKEN") from None
        return str(claims["sub"])

    @staticmethod
    def _decode(token: str, keys: KeySet):
        try:
            return jwt.decode(token, keys, algorithms=OIDC_ALGORITHMS)
        except (JoseError, ValueError, TypeError):
            raise Unauthorized("the token is not valid", "INVALID_TOKEN") from None

    async def _key_set(self, *, force: bool) -> KeySet:
        async with self._lock:
            age = self._clock.monotonic() - self._fetched_at
            fresh = age < self._settings.oidc_jwks_cache_seconds
            # Forced refetches are spaced too: forged kids must not flood the issuer.
            spaced = age < self._settings.oidc_min_refetch_seconds
            if self._keys is not None and ((fresh and not force) or spaced):
                return self._keys
            self._keys = await self._fetch()
            self._fetched_at = self._clock.monotonic()
            return self._keys

    async def _fetch(self) -> KeySet:
        import aiohttp

        url = str(self._settings.oidc_jwks_url)
        try:
            async with (
                aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as http,
                http.get(url) as response,
            ):
                if response.status != 200:
                    raise ValueError(f"HTTP {response.status}")
                return KeySet.import_key_set(await response.json(content_type=None))
        except (aiohttp.ClientError, TimeoutError, ValueError, TypeError, JoseError) as exc:
            log.warning("could not fetch the OIDC JWKS from %s: %s", url, exc)
            if self._keys is not None:
                return self._keys  # keep the last good set rather than lock everyone out
            raise Unauthorized(
                "the identity provider's keys are not available", "INVALID_TOKEN"
            ) from None
