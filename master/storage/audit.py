"""The approval audit (issue 15 §4): rows written for the gateway, read per user, node or all.

Ownership is part of the query's WHERE, as in `edge_sessions`: a user's listing never reads
another user's rows. The operator's listing (`rawp master audit`) passes no user.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from master.storage.db import utc
from master.storage.schema import approval_audit, sessions

ANSWERED = "answered"  # an allowed person picked an option (or typed an answer)
REFUSED = "refused"  # someone not allowed pressed a button: nothing was sent to the agent
EXPIRED = "expired"  # no answer in time: the gateway's default was applied, or the agent's
OUTCOMES = (ANSWERED, REFUSED, EXPIRED)


@dataclass(frozen=True)
class AuditRow:
    id: str
    session_id: str
    node_id: str
    user_id: str
    recorded_at: datetime
    outcome: str
    actor: str | None
    platform: str
    interaction_id: str
    option_id: str | None
    option_label: str | None
    tool_name: str | None
    input_preview: str | None
    detail: str | None


async def session_of(conn: AsyncConnection, user_id: str, session_id: str) -> Any:
    """The user's session in any state: an expiry may be reported after the session ended."""
    query = select(sessions.c.id, sessions.c.node_id).where(
        sessions.c.id == session_id, sessions.c.user_id == user_id
    )
    return (await conn.execute(query)).first()


async def record(conn: AsyncConnection, row: AuditRow) -> bool:
    """Store one record; False when its id was stored before (the gateway retried)."""
    try:
        async with conn.begin_nested():
            await conn.execute(insert(approval_audit).values(**row.__dict__))
    except IntegrityError:
        return False
    return True


async def listing(
    conn: AsyncConnection,
    *,
    user_id: str | None = None,
    node_id: str | None = None,
    since: datetime | None = None,
    limit: int = 100,
) -> list[AuditRow]:
    """Newest first. `since` is compared in Python (schema module note: SQLite's naive times)."""
    c = approval_audit.c
    where = []
    if user_id is not None:
        where.append(c.user_id == user_id)
    if node_id is not None:
        where.append(c.node_id == node_id)
    query = select(approval_audit).where(*where).order_by(c.recorded_at.desc(), c.id)
    if since is None:
        query = query.limit(limit)
    rows = []
    for found in await conn.execute(query):
        row = AuditRow(**{**found._asdict(), "recorded_at": utc(found.recorded_at)})
        if since is not None and row.recorded_at < since:
            break  # newest first: everything after this is older still
        rows.append(row)
        if len(rows) >= limit:
            break
    return rows


async def by_id(conn: AsyncConnection, user_id: str, record_id: str) -> AuditRow | None:
    c = approval_audit.c
    found = (
        await conn.execute(select(approval_audit).where(c.id == record_id, c.user_id == user_id))
    ).first()
    if found is None:
        return None
    return AuditRow(**{**found._asdict(), "recorded_at": utc(found.recorded_at)})
