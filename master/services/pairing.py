"""Pairing a local client with the master (§3.1–§3.3) and unregistering it (§3.5).

A pairing token is a random secret of 43 characters (≥ 32, §3.1), stored only as a fingerprint,
bound to the user who asked for it, single use, and dead 15 minutes after issue (M-PAIR-02).
The node created from it belongs to that user (architecture: identity). The `client_address` is
checked by the master's `AddressPolicy` (§3.2): literal spellings and every answer of a name.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import quote

from master.services.addresses import AddressPolicy
from master.services.sockets import NodeSockets
from master.services.tokens import TokenService
from master.storage import config as config_store
from master.storage import nodes as store
from master.storage.db import Database, utc
from rawp.clock import Clock, new_id, new_secret
from rawp.errors import Unauthorized
from rawp.rest import PairRequest, TokenGrant
from rawp.tokens import fingerprint

log = logging.getLogger("rawp.master.pairing")

PAIR_PATH = "/v1/auth/pair"


@dataclass(frozen=True)
class PairingTicket:
    token: str
    url: str
    expires_at: datetime


class PairingService:
    def __init__(
        self,
        db: Database,
        tokens: TokenService,
        sockets: NodeSockets,
        clock: Clock,
        *,
        base_url: str,
        ttl_seconds: int,
        addresses: AddressPolicy,
    ) -> None:
        self._db = db
        self._tokens = tokens
        self._sockets = sockets
        self._clock = clock
        self._base_url = base_url.rstrip("/")
        self._ttl = ttl_seconds
        self._addresses = addresses

    async def issue(self, user_id: str) -> PairingTicket:
        """A new pairing URL for `user_id` (§3.1): `{base}/v1/auth/pair?token=…`."""
        now = self._clock.now()
        token = new_secret()
        expires_at = now + timedelta(seconds=self._ttl)
        async with self._db.begin() as conn:
            await store.delete_expired_pairing_tokens(conn, now)
            await store.ensure_user(conn, user_id, now)
            await store.insert_pairing_token(conn, fingerprint(token), user_id, now, expires_at)
        url = f"{self._base_url}{PAIR_PATH}?token={quote(token)}"
        return PairingTicket(token=token, url=url, expires_at=expires_at)

    async def pair(self, request: PairRequest) -> TokenGrant:
        """§3.3: check the address, burn the token, create the node, hand out our tokens."""
        # The address is checked before the token is spent, so a client with a bad address can
        # fix it and retry with the same URL.
        address = await self._addresses.check(request.client_address)
        now = self._clock.now()
        fp = fingerprint(request.pairing_token)
        node_id = new_id()
        credentials = store.ClientCredentials(
            access_token=request.client_credentials.access_token,
            refresh_token=request.client_credentials.refresh_token,
            expires_at=now + timedelta(seconds=request.client_credentials.expires_in),
        )
        async with self._db.begin() as conn:
            row = await store.pairing_token(conn, fp)
            if row is None:
                raise Unauthorized("the pairing token is not valid", "INVALID_PAIRING_TOKEN")
            if row.used_at is not None:
                raise Unauthorized(
                    "the pairing token was already used; ask for a new pairing URL",
                    "PAIRING_TOKEN_USED",
                )
            if utc(row.expires_at) <= now:
                raise Unauthorized(
                    "the pairing token has expired (15 minutes); ask for a new pairing URL",
                    "PAIRING_TOKEN_EXPIRED",
                )
            if not await store.claim_pairing_token(conn, fp, node_id, now):
                raise Unauthorized("the pairing token was already used", "PAIRING_TOKEN_USED")
            await store.insert_node(
                conn,
                node_id=node_id,
                user_id=row.user_id,
                device_name=request.device_name,
                client_address=address,
                credentials=credentials,
                now=now,
            )
            issued = await self._tokens.issue(conn, node_id)
        log.info("paired node %s (%s) for user %s", node_id, request.device_name, row.user_id)
        return issued

    async def unregister(self, node: store.Node) -> None:
        """§3.5: every token of the node dies, its sessions end and its sockets close."""
        now = self._clock.now()
        async with self._db.begin() as conn:
            await store.unregister_node(conn, node.id, now)
            ended = await config_store.terminate_node_sessions(conn, node.id, now)
        closed = await self._sockets.close_node(node.id)
        log.info(
            "unregistered node %s; ended %d session(s), closed %d socket(s)", node.id, ended, closed
        )
