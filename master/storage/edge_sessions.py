"""Queries behind the Edge API (RAWP §9): a user's nodes and sessions, activity, edge tickets.

Ownership is part of every query's WHERE (`user_id = …`), so a row of another user is simply
not found: the Edge API answers 404 for it and never reads its data (E-AUTH, docs/edge-api.md).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from master.storage.db import utc
from master.storage.nodes import ACTIVE
from master.storage.schema import edge_tickets, nodes, sessions
from rawp.session_state import SessionState

LISTED_STATES = (SessionState.INIT, SessionState.RUNNING, SessionState.DETACHED)


async def user_nodes(conn: AsyncConnection, user_id: str) -> list[Any]:
    """The user's paired (active) nodes, oldest first."""
    rows = await conn.execute(
        select(nodes)
        .where(nodes.c.user_id == user_id, nodes.c.status == ACTIVE)
        .order_by(nodes.c.paired_at, nodes.c.id)
    )
    return list(rows)


async def user_node(conn: AsyncConnection, user_id: str, node_id: str, *, active: bool = True):
    where = [nodes.c.id == node_id, nodes.c.user_id == user_id]
    if active:
        where.append(nodes.c.status == ACTIVE)
    return (await conn.execute(select(nodes).where(*where))).first()


async def session_counts(conn: AsyncConnection, node_ids: list[str]) -> dict[str, int]:
    """Sessions not TERMINATED per node (EP-E1 `active_sessions_count`)."""
    if not node_ids:
        return {}
    rows = await conn.execute(
        select(sessions.c.node_id, func.count())
        .where(
            sessions.c.node_id.in_(node_ids),
            sessions.c.status.in_([s.value for s in LISTED_STATES]),
        )
        .group_by(sessions.c.node_id)
    )
    return {node_id: count for node_id, count in rows}


async def user_sessions(
    conn: AsyncConnection,
    user_id: str,
    *,
    status: SessionState | None = None,
    node_id: str | None = None,
) -> list[Any]:
    """EP-E5: never TERMINATED (E-API-10); newest first."""
    wanted = [status] if status is not None else list(LISTED_STATES)
    where = [sessions.c.user_id == user_id, sessions.c.status.in_([s.value for s in wanted])]
    if node_id is not None:
        where.append(sessions.c.node_id == node_id)
    rows = await conn.execute(
        select(sessions).where(*where).order_by(sessions.c.created_at.desc(), sessions.c.id)
    )
    return list(rows)


async def user_session(
    conn: AsyncConnection, user_id: str, session_id: str, *, ended: bool = False
):
    """The user's session unless it is TERMINATED (a terminated id is as good as unknown) —
    or, with `ended`, in any state (what an ended session used, issue 16 §4)."""
    where = [sessions.c.id == session_id, sessions.c.user_id == user_id]
    if not ended:
        where.append(sessions.c.status != SessionState.TERMINATED.value)
    return (await conn.execute(select(sessions).where(*where))).first()


async def live_session(conn: AsyncConnection, session_id: str):
    """The session if it is not TERMINATED, whoever's it is (a replica taking it over)."""
    where = [sessions.c.id == session_id, sessions.c.status.in_([s.value for s in LISTED_STATES])]
    return (await conn.execute(select(sessions).where(*where))).first()


async def live_sessions(conn: AsyncConnection, node_id: str | None = None) -> list[Any]:
    where = [sessions.c.status.in_([s.value for s in LISTED_STATES])]
    if node_id is not None:
        where.append(sessions.c.node_id == node_id)
    return list(await conn.execute(select(sessions).where(*where)))


TOUCH_SLICE = 500  # sessions whose `last_activity_at` one statement of a round writes


async def touch_sessions(conn: AsyncConnection, moments: dict[str, datetime]) -> None:
    """Every session's `last_activity_at`, to the second, in the caller's transaction
    (master.edge.usage.bookkeeping rule 1): one `UPDATE … WHERE id IN (…)` for each second
    that marks fall in, `TOUCH_SLICE` sessions at most a statement.

    A statement a session made SQLAlchemy build every row's parameters on the event loop and
    the database thread step 10,000 times a round, each step a hand-over of the GIL that the
    relay waited on (issue 35: 30-65 ms of loop lag every round at 10,000 sessions); a round's
    marks fall in a few seconds, so it is now a few dozen statements."""
    by_second: dict[datetime, list[str]] = {}
    for session_id, moment in moments.items():
        by_second.setdefault(moment.replace(microsecond=0), []).append(session_id)
    for moment, ids in by_second.items():
        for start in range(0, len(ids), TOUCH_SLICE):
            chosen = sessions.c.id.in_(ids[start : start + TOUCH_SLICE])
            await conn.execute(update(sessions).where(chosen).values(last_activity_at=moment))


def last_activity(row: Any) -> datetime:
    return utc(row.last_activity_at) or utc(row.updated_at) or utc(row.created_at)


# --- edge tickets (§9.4, A-22) ----------------------------------------------------------------


async def insert_ticket(
    conn: AsyncConnection,
    *,
    fingerprint: str,
    session_id: str,
    user_id: str,
    now: datetime,
    expires_at: datetime,
) -> None:
    await conn.execute(
        insert(edge_tickets).values(
            fingerprint=fingerprint,
            session_id=session_id,
            user_id=user_id,
            created_at=now,
            expires_at=expires_at,
        )
    )


async def ticket(conn: AsyncConnection, fingerprint: str):
    return (
        await conn.execute(select(edge_tickets).where(edge_tickets.c.fingerprint == fingerprint))
    ).first()


async def burn_ticket(conn: AsyncConnection, fingerprint: str, now: datetime) -> bool:
    """Mark a ticket used; False when it was used already (single use, even across replicas)."""
    result = await conn.execute(
        update(edge_tickets)
        .where(edge_tickets.c.fingerprint == fingerprint, edge_tickets.c.used_at.is_(None))
        .values(used_at=now)
    )
    return result.rowcount == 1


async def delete_old_tickets(conn: AsyncConnection, before: datetime) -> None:
    """Tickets expired before `before` are of no use to anyone; keep the table small."""
    rows = await conn.execute(select(edge_tickets.c.fingerprint, edge_tickets.c.expires_at))
    old = [fp for fp, expires_at in rows if utc(expires_at) < before]
    if old:
        await conn.execute(edge_tickets.delete().where(edge_tickets.c.fingerprint.in_(old)))
