"""Queries behind scheduled prompts (issue 30 §5, master.edge.sessions.scheduler).

Ownership is part of every query an edge reaches (`user_id = …`), so another user's schedule is
simply not found (404, as for sessions). `claim` is the one write that decides which replica
runs a tick: a conditional UPDATE of `last_run_at` from the value the replica read, which
matches one row for the first replica and none for every later one — the same on SQLite and
PostgreSQL, with no lock held across the run.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import delete, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from master.storage.schema import schedules


@dataclass(frozen=True)
class NewSchedule:
    id: str
    user_id: str
    node_id: str
    agent_name: str
    workspace_path: str | None
    prompt: str
    cron: str
    timezone: str
    created_at: datetime


async def add(conn: AsyncConnection, made: NewSchedule) -> None:
    await conn.execute(
        insert(schedules).values(
            id=made.id,
            user_id=made.user_id,
            node_id=made.node_id,
            agent_name=made.agent_name,
            workspace_path=made.workspace_path,
            prompt=made.prompt,
            cron=made.cron,
            timezone=made.timezone,
            paused=False,
            created_at=made.created_at,
            last_run_at=made.created_at,  # the first tick is the first one after creation
            missed_runs=0,
        )
    )


async def user_schedules(conn: AsyncConnection, user_id: str) -> list[Any]:
    rows = await conn.execute(
        select(schedules)
        .where(schedules.c.user_id == user_id)
        .order_by(schedules.c.created_at, schedules.c.id)
    )
    return list(rows)


async def user_schedule(conn: AsyncConnection, user_id: str, schedule_id: str) -> Any:
    where = (schedules.c.id == schedule_id, schedules.c.user_id == user_id)
    return (await conn.execute(select(schedules).where(*where))).first()


async def set_paused(
    conn: AsyncConnection, user_id: str, schedule_id: str, paused: bool, now: datetime
) -> bool:
    """Pausing keeps `last_run_at`; resuming moves it to now, so the ticks that fell while the
    schedule was paused are neither run nor counted as missed."""
    values: dict[str, Any] = {"paused": paused}
    if not paused:
        values["last_run_at"] = now
    result = await conn.execute(
        update(schedules)
        .where(schedules.c.id == schedule_id, schedules.c.user_id == user_id)
        .values(**values)
    )
    return result.rowcount == 1


async def remove(conn: AsyncConnection, user_id: str, schedule_id: str) -> bool:
    result = await conn.execute(
        delete(schedules).where(schedules.c.id == schedule_id, schedules.c.user_id == user_id)
    )
    return result.rowcount == 1


async def active(conn: AsyncConnection) -> list[Any]:
    """Every schedule not paused: what a scan looks at."""
    rows = await conn.execute(select(schedules).where(schedules.c.paused.is_(False)))
    return list(rows)


async def claim(conn: AsyncConnection, row: Any, tick: datetime, missed: int) -> bool:
    """Take `tick` for this replica (module note): True for exactly one of the replicas that
    read the same `last_run_at`. `row.last_run_at` is passed back exactly as it was read."""
    result = await conn.execute(
        update(schedules)
        .where(
            schedules.c.id == row.id,
            schedules.c.last_run_at == row.last_run_at,
            schedules.c.paused.is_(False),
        )
        .values(last_run_at=tick, missed_runs=schedules.c.missed_runs + missed)
    )
    return result.rowcount == 1


async def record_run(
    conn: AsyncConnection, schedule_id: str, session_id: str | None, outcome: str, missed: int
) -> None:
    """What a claimed run did; a run that could not start counts as one more missed run."""
    await conn.execute(
        update(schedules)
        .where(schedules.c.id == schedule_id)
        .values(
            last_session_id=session_id,
            last_outcome=outcome[:400],
            missed_runs=schedules.c.missed_runs + missed,
        )
    )
