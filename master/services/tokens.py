"""The master's own tokens (§3.3, §3.4, docs/protocol.md "master tokens").

Access tokens are ES256 JWTs (`kind: "node"`, `sub` = node_id). They are checked on every call
(§4): signature, expiry and kind, and then the node itself — a node that unregistered (§3.5)
makes every token it ever held useless at once, however long the JWT still had to live.
Refresh tokens are opaque secrets stored as fingerprints, rotated on every use and revoked
with the node.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from master.storage import nodes as store
from master.storage.db import Database, utc
from rawp.clock import Clock, new_secret
from rawp.errors import Unauthorized
from rawp.rest import TokenGrant
from rawp.tokens import SigningKey, bearer, fingerprint, verify

NODE_TOKEN_KIND = "node"
LAST_SEEN_GRANULARITY = timedelta(seconds=60)


class TokenService:
    def __init__(
        self,
        db: Database,
        key: SigningKey,
        clock: Clock,
        *,
        access_ttl: int,
        refresh_ttl: int,
    ) -> None:
        self._db = db
        self._key = key
        self._clock = clock
        self.access_ttl = access_ttl
        self.refresh_ttl = refresh_ttl

    def server_credentials(self) -> dict[str, Any]:
        """The public JWK clients verify our tokens with (§3.3 `server_credentials`)."""
        return self._key.public_jwk()

    async def issue(self, conn: AsyncConnection, node_id: str) -> TokenGrant:
        """A fresh access + refresh token pair in the §3.3 response shape."""
        now = self._clock.now()
        access = self._key.sign(
            {"sub": node_id}, self.access_ttl, kind=NODE_TOKEN_KIND, clock=self._clock
        )
        refresh = new_secret()
        await store.insert_refresh_token(
            conn, fingerprint(refresh), node_id, now, now + timedelta(seconds=self.refresh_ttl)
        )
        return TokenGrant(
            access_token=access,
            refresh_token=refresh,
            expires_in=self.access_ttl,
            server_credentials=self.server_credentials(),
            node_id=node_id,
        )

    async def refresh(self, refresh_token: str) -> TokenGrant:
        """§3.4.1: trade a live refresh token for a new pair; the old one dies (rotation)."""
        now = self._clock.now()
        fp = fingerprint(refresh_token)
        async with self._db.begin() as conn:
            row = await store.refresh_token(conn, fp)
            if row is None:
                raise Unauthorized("the refresh token is not valid", "INVALID_TOKEN")
            if row.revoked_at is not None:
                raise Unauthorized("the refresh token has been revoked", "TOKEN_REVOKED")
            if row.rotated_at is not None:
                raise Unauthorized(
                    "the refresh token was already used; use the newest one", "INVALID_TOKEN"
                )
            if utc(row.expires_at) <= now:
                raise Unauthorized("the refresh token has expired; pair again", "TOKEN_EXPIRED")
            node = await store.get_node(conn, row.node_id)
            if node is None or not node.active:
                raise Unauthorized("this node has been unregistered", "TOKEN_REVOKED")
            if not await store.rotate_refresh_token(conn, fp, now):
                raise Unauthorized(
                    "the refresh token was already used; use the newest one", "INVALID_TOKEN"
                )
            await store.touch_node(conn, node.id, now)
            return await self.issue(conn, node.id)

    async def authenticate(self, authorization: str | None) -> store.Node:
        """The active node behind `Authorization: Bearer <access token>`, or 401 (§4)."""
        claims = verify(bearer(authorization), self._key, kind=NODE_TOKEN_KIND, clock=self._clock)
        async with self._db.connect() as conn:
            node = await store.get_node(conn, str(claims["sub"]))
        if node is None:
            raise Unauthorized("the token names no known node", "INVALID_TOKEN")
        if not node.active:
            raise Unauthorized("this node has been unregistered", "TOKEN_REVOKED")
        now = self._clock.now()
        if node.last_seen_at is None or now - node.last_seen_at >= LAST_SEEN_GRANULARITY:
            # K-09 needs "when did we last hear from it"; a write per minute is plenty.
            async with self._db.begin() as conn:
                await store.touch_node(conn, node.id, now)
        return node
