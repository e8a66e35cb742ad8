"""The tokens the master presents to this client (RAWP §3.3, §3.4.2, §4; A-06).

The client signs its own `client_credentials.access_token` (an ES256 JWT, `kind: "client"`)
and checks signature, expiry and kind on every master→client call (C-AUTH-03). Refresh tokens
are opaque, kept only as a fingerprint, and rotate on every use: the old one dies (§3.4.2).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from client.state import StateDir
from rawp.clock import SYSTEM_CLOCK, Clock, new_secret
from rawp.errors import Unauthorized
from rawp.rest import ClientCredentials
from rawp.tokens import SigningKey, bearer, fingerprint, verify

KIND = "client"


@dataclass(frozen=True)
class TokenPair:
    access_token: str
    refresh_token: str
    expires_in: int

    def to_body(self) -> ClientCredentials:
        return ClientCredentials(
            access_token=self.access_token,
            refresh_token=self.refresh_token,
            expires_in=self.expires_in,
        )


class ClientAuth:
    def __init__(self, state: StateDir, ttl: int, clock: Clock = SYSTEM_CLOCK) -> None:
        self.state = state
        self.key: SigningKey = state.signing_key()
        self.ttl = ttl
        self.clock = clock

    def issue(self) -> TokenPair:
        """A fresh pair; the previous refresh token stops working."""
        access = self.key.sign({"sub": "master"}, self.ttl, kind=KIND, clock=self.clock)
        refresh = new_secret()
        self.state.credentials.client_refresh_fingerprint = fingerprint(refresh)
        self.state.save()
        return TokenPair(access, refresh, self.ttl)

    def check(self, authorization: str | None) -> dict[str, Any]:
        """Verify the bearer token of a master→client call, or raise 401 (C-AUTH-03)."""
        return verify(bearer(authorization), self.key, kind=KIND, clock=self.clock)

    def refresh(self, refresh_token: str) -> TokenPair:
        """EP-C1: trade a valid refresh token for a new pair (C-AUTH-02)."""
        expected = self.state.credentials.client_refresh_fingerprint
        if not expected or fingerprint(refresh_token) != expected:
            raise Unauthorized("the refresh token is not valid", "INVALID_REFRESH_TOKEN")
        return self.issue()
