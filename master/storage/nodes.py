"""Queries on users, nodes, pairing tokens and refresh tokens. Each takes an open connection."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from master.storage.db import utc
from master.storage.schema import nodes, pairing_tokens, refresh_tokens, users

ACTIVE = "active"
UNREGISTERED = "unregistered"


@dataclass(frozen=True)
class ClientCredentials:
    """§3.3 `client_credentials`: secrets, so they never appear in a repr or a log line."""

    access_token: str = field(repr=False)
    refresh_token: str = field(repr=False)
    expires_at: datetime | None = None


@dataclass(frozen=True)
class Node:
    id: str
    user_id: str
    device_name: str
    client_address: str
    status: str
    paired_at: datetime
    last_seen_at: datetime | None
    credentials: ClientCredentials | None = field(repr=False)

    @property
    def active(self) -> bool:
        return self.status == ACTIVE


async def ensure_user(conn: AsyncConnection, user_id: str, now: datetime) -> None:
    found = await conn.scalar(select(users.c.id).where(users.c.id == user_id))
    if found is None:
        await conn.execute(insert(users).values(id=user_id, created_at=now))


async def insert_pairing_token(
    conn: AsyncConnection, fingerprint: str, user_id: str, now: datetime, expires_at: datetime
) -> None:
    await conn.execute(
        insert(pairing_tokens).values(
            fingerprint=fingerprint, user_id=user_id, created_at=now, expires_at=expires_at
        )
    )


async def pairing_token(conn: AsyncConnection, fingerprint: str):
    row = (
        await conn.execute(
            select(pairing_tokens).where(pairing_tokens.c.fingerprint == fingerprint)
        )
    ).first()
    return row


async def claim_pairing_token(
    conn: AsyncConnection, fingerprint: str, node_id: str, now: datetime
) -> bool:
    """Mark the token used; False when someone else used it first (single use, §3.1)."""
    result = await conn.execute(
        update(pairing_tokens)
        .where(pairing_tokens.c.fingerprint == fingerprint, pairing_tokens.c.used_at.is_(None))
        .values(used_at=now, node_id=node_id)
    )
    return result.rowcount == 1


async def delete_expired_pairing_tokens(conn: AsyncConnection, now: datetime) -> None:
    """M-PAIR-02: unused tokens past their expiry are discarded, not kept around."""
    rows = await conn.execute(
        select(pairing_tokens.c.fingerprint, pairing_tokens.c.expires_at).where(
            pairing_tokens.c.used_at.is_(None)
        )
    )
    expired = [fp for fp, expires_at in rows if utc(expires_at) <= now]
    if expired:
        await conn.execute(pairing_tokens.delete().where(pairing_tokens.c.fingerprint.in_(expired)))


async def insert_node(
    conn: AsyncConnection,
    *,
    node_id: str,
    user_id: str,
    device_name: str,
    client_address: str,
    credentials: ClientCredentials,
    now: datetime,
) -> None:
    await conn.execute(
        insert(nodes).values(
            id=node_id,
            user_id=user_id,
            device_name=device_name,
            client_address=client_address,
            status=ACTIVE,
            client_access_token=credentials.access_token,
            client_refresh_token=credentials.refresh_token,
            client_token_expires_at=credentials.expires_at,
            paired_at=now,
            last_seen_at=now,
        )
    )


async def get_node(conn: AsyncConnection, node_id: str) -> Node | None:
    row = (await conn.execute(select(nodes).where(nodes.c.id == node_id))).first()
    if row is None:
        return None
    credentials = None
    if row.client_access_token is not None:
        credentials = ClientCredentials(
            row.client_access_token, row.client_refresh_token, utc(row.client_token_expires_at)
        )
    return Node(
        id=row.id,
        user_id=row.user_id,
        device_name=row.device_name,
        client_address=row.client_address,
        status=row.status,
        paired_at=utc(row.paired_at),
        last_seen_at=utc(row.last_seen_at),
        credentials=credentials,
    )


async def touch_node(conn: AsyncConnection, node_id: str, now: datetime) -> None:
    await conn.execute(update(nodes).where(nodes.c.id == node_id).values(last_seen_at=now))


async def store_client_credentials(
    conn: AsyncConnection, node_id: str, credentials: ClientCredentials
) -> None:
    await conn.execute(
        update(nodes)
        .where(nodes.c.id == node_id, nodes.c.status == ACTIVE)
        .values(
            client_access_token=credentials.access_token,
            client_refresh_token=credentials.refresh_token,
            client_token_expires_at=credentials.expires_at,
        )
    )


async def unregister_node(conn: AsyncConnection, node_id: str, now: datetime) -> None:
    """§3.5: the node keeps its row (owner of past sessions) but loses every secret."""
    await conn.execute(
        update(nodes)
        .where(nodes.c.id == node_id)
        .values(
            status=UNREGISTERED,
            unregistered_at=now,
            client_access_token=None,
            client_refresh_token=None,
            client_token_expires_at=None,
        )
    )
    await conn.execute(
        update(refresh_tokens)
        .where(refresh_tokens.c.node_id == node_id, refresh_tokens.c.revoked_at.is_(None))
        .values(revoked_at=now)
    )


async def insert_refresh_token(
    conn: AsyncConnection, fingerprint: str, node_id: str, now: datetime, expires_at: datetime
) -> None:
    await conn.execute(
        insert(refresh_tokens).values(
            fingerprint=fingerprint, node_id=node_id, issued_at=now, expires_at=expires_at
        )
    )


async def refresh_token(conn: AsyncConnection, fingerprint: str):
    return (
        await conn.execute(
            select(refresh_tokens).where(refresh_tokens.c.fingerprint == fingerprint)
        )
    ).first()


async def rotate_refresh_token(conn: AsyncConnection, fingerprint: str, now: datetime) -> bool:
    """Retire a refresh token on use; False if it was already rotated or revoked (a race)."""
    result = await conn.execute(
        update(refresh_tokens)
        .where(
            refresh_tokens.c.fingerprint == fingerprint,
            refresh_tokens.c.rotated_at.is_(None),
            refresh_tokens.c.revoked_at.is_(None),
        )
        .values(rotated_at=now)
    )
    return result.rowcount == 1
