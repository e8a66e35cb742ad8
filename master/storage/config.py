"""Queries on config scopes (§4.1.1) and on sessions' pinned config (§4.1.8) and state (§5).

A session's `status` is never assigned: `move_session` names a `SessionEvent` and the UPDATE
matches only the states that event may leave (`rawp.session_state.predecessors`), so of several
master replicas racing on one row the table decides, and a TERMINATED row stays TERMINATED
whoever writes after it (issue 14 §5). The caller learns whether its write moved the row and
what the row holds, and acts on a refusal.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from master.storage.db import utc
from master.storage.schema import config_scopes, sessions
from rawp.session_state import ACTIVE_STATES, SessionEvent, SessionState, predecessors, target

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


@dataclass(frozen=True)
class SessionMove:
    """What a conditional state write did: `moved` the row, or found it in `state`."""

    moved: bool
    state: SessionState | None  # the row's state now; None when there is no such session

    @property
    def ended(self) -> bool:
        """The session is TERMINATED (or unknown): nothing may bring it back."""
        return self.state is None or self.state is SessionState.TERMINATED


MOVE_CHUNK = 500  # ids per statement: well under every database's limit of bound parameters


async def move_session(
    conn: AsyncConnection, session_id: str, event: SessionEvent, now: datetime
) -> SessionMove:
    """Apply `event` to the session if its state allows it (§5, the table); rowcount checked."""
    after = target(event)
    values: dict[str, Any] = {"status": after.value, "updated_at": now}
    if after is SessionState.TERMINATED:
        values["terminated_at"] = now
    result = await conn.execute(
        update(sessions)
        .where(sessions.c.id == session_id, sessions.c.status.in_(_values(predecessors(event))))
        .values(**values)
    )
    if result.rowcount == 1:
        return SessionMove(True, after)
    found = await conn.scalar(select(sessions.c.status).where(sessions.c.id == session_id))
    return SessionMove(False, None if found is None else SessionState(found))


async def move_sessions(
    conn: AsyncConnection, session_ids: list[str], event: SessionEvent, now: datetime
) -> int:
    """`move_session` for many sessions in a few statements (a master stopping with 10,000
    sessions, issue 35): each row moves only if its state allows it; how many moved."""
    after = target(event)
    values: dict[str, Any] = {"status": after.value, "updated_at": now}
    if after is SessionState.TERMINATED:
        values["terminated_at"] = now
    allowed = _values(predecessors(event))
    moved = 0
    for start in range(0, len(session_ids), MOVE_CHUNK):
        chunk = session_ids[start : start + MOVE_CHUNK]
        result = await conn.execute(
            update(sessions)
            .where(sessions.c.id.in_(chunk), sessions.c.status.in_(allowed))
            .values(**values)
        )
        moved += result.rowcount
    return moved


async def terminate_node_sessions(conn: AsyncConnection, node_id: str, now: datetime) -> int:
    """§3.5: every session of the node that may still end, ends; how many did."""
    allowed = _values(predecessors(SessionEvent.TERMINATE))
    result = await conn.execute(
        update(sessions)
        .where(sessions.c.node_id == node_id, sessions.c.status.in_(allowed))
        .values(status=SessionState.TERMINATED.value, updated_at=now, terminated_at=now)
    )
    return result.rowcount


def _values(states: frozenset[SessionState]) -> list[str]:
    return sorted(state.value for state in states)
