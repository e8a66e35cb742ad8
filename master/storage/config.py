"""Queries on config scopes (§4.1.1) and on sessions' pinned config (§4.1.8)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from master.storage.db import utc
from master.storage.schema import config_scopes, sessions
from rawp.session_state import ACTIVE_STATES, SessionState

LIMITS = "limits"
CAPABILITIES = "capabilities"


@dataclass(frozen=True)
class ScopeSnapshot:
    scope: str
    version: int
    snapshot: Any  # the limits object, or the capabilities list
    effective_at: datetime
    reason: str | None
    accepted_at: datetime


async def scopes(conn: AsyncConnection, node_id: str) -> dict[str, ScopeSnapshot]:
    rows = await conn.execute(select(config_scopes).where(config_scopes.c.node_id == node_id))
    return {
        row.scope: ScopeSnapshot(
            row.scope,
            row.version,
            row.snapshot,
            utc(row.effective_at),
            row.reason,
            utc(row.accepted_at),
        )
        for row in rows
    }


async def current_version(conn: AsyncConnection, node_id: str, scope: str) -> int | None:
    return await conn.scalar(
        select(config_scopes.c.version).where(
            config_scopes.c.node_id == node_id, config_scopes.c.scope == scope
        )
    )


async def replace_scope(
    conn: AsyncConnection, node_id: str, new: ScopeSnapshot, *, restart: bool
) -> int | None:
    """Store `new` if its version wins (§4.1.4); return None on success, else the held version.

    The version test is part of the UPDATE's WHERE, so two racing updates (even on two master
    replicas) cannot both win. `restart` (version 1) replaces whatever is held (M-CFG-11/12).
    """
    values = {
        "version": new.version,
        "snapshot": new.snapshot,
        "effective_at": new.effective_at,
        "reason": new.reason,
        "accepted_at": new.accepted_at,
    }
    where = [config_scopes.c.node_id == node_id, config_scopes.c.scope == new.scope]
    if not restart:
        where.append(config_scopes.c.version < new.version)
    result = await conn.execute(update(config_scopes).where(*where).values(**values))
    if result.rowcount == 1:
        return None
    held = await current_version(conn, node_id, new.scope)
    if held is not None:
        return held
    try:
        async with conn.begin_nested():
            await conn.execute(
                insert(config_scopes).values(node_id=node_id, scope=new.scope, **values)
            )
    except IntegrityError:
        # A concurrent first sync got there first; its version is what we now hold.
        held = await current_version(conn, node_id, new.scope)
        return held if held is not None else 0
    return None


async def count_active_sessions(conn: AsyncConnection, node_id: str) -> int:
    """Sessions RUNNING or DETACHED on the node (§4.1.5 `active_sessions_affected`, A-09)."""
    return await conn.scalar(
        select(func.count())
        .select_from(sessions)
        .where(sessions.c.node_id == node_id, sessions.c.status.in_(list(ACTIVE_STATES)))
    )


async def insert_session(conn: AsyncConnection, **values: Any) -> None:
    await conn.execute(insert(sessions).values(**values))


async def get_session(conn: AsyncConnection, session_id: str):
    return (await conn.execute(select(sessions).where(sessions.c.id == session_id))).first()


async def set_session_status(
    conn: AsyncConnection, session_id: str, status: SessionState, now: datetime
) -> None:
    values: dict[str, Any] = {"status": status.value, "updated_at": now}
    if status is SessionState.TERMINATED:
        values["terminated_at"] = now
    await conn.execute(update(sessions).where(sessions.c.id == session_id).values(**values))


async def terminate_node_sessions(conn: AsyncConnection, node_id: str, now: datetime) -> None:
    await conn.execute(
        update(sessions)
        .where(sessions.c.node_id == node_id, sessions.c.status != SessionState.TERMINATED.value)
        .values(status=SessionState.TERMINATED.value, updated_at=now, terminated_at=now)
    )
