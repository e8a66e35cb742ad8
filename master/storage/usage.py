"""Usage records (E-WS-07), their sums for node metrics (RAWP §9.2.2), the edge usage endpoint
and budgets (issue 16 §4), and the record of budget warnings sent."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import ColumnElement, func, insert, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from master.storage.schema import budget_warnings, usage_records


@dataclass(frozen=True)
class UsageRow:
    message_id: str
    session_id: str
    node_id: str
    user_id: str
    recorded_at: datetime
    input_tokens: int
    output_tokens: int
    tool_invocations: int
    cost_usd: float


@dataclass(frozen=True)
class UsageSum:
    input_tokens: int = 0
    output_tokens: int = 0
    tool_invocations: int = 0
    cost_usd: float = 0.0


async def record(conn: AsyncConnection, row: UsageRow) -> bool:
    """Store one `session.usage`; False when its message_id was recorded before (a replay)."""
    try:
        async with conn.begin_nested():
            await conn.execute(insert(usage_records).values(**row.__dict__))
    except IntegrityError:
        return False
    return True


async def total(conn: AsyncConnection, node_id: str, since: datetime) -> UsageSum:
    return await total_where(conn, since, node_id=node_id)


async def total_where(
    conn: AsyncConnection,
    since: datetime | None = None,
    *,
    node_id: str | None = None,
    user_id: str | None = None,
    session_id: str | None = None,
) -> UsageSum:
    """The sum of the records since `since` (all of them with None) that match every id given."""
    c = usage_records.c
    where: list[ColumnElement[bool]] = []
    if since is not None:
        where.append(c.recorded_at >= since)
    for column, value in ((c.node_id, node_id), (c.user_id, user_id), (c.session_id, session_id)):
        if value is not None:
            where.append(column == value)
    row = (
        await conn.execute(
            select(
                func.coalesce(func.sum(c.input_tokens), 0),
                func.coalesce(func.sum(c.output_tokens), 0),
                func.coalesce(func.sum(c.tool_invocations), 0),
                func.coalesce(func.sum(c.cost_usd), 0.0),
            ).where(*where)
        )
    ).one()
    return UsageSum(int(row[0]), int(row[1]), int(row[2]), float(row[3]))


async def first_warning(
    conn: AsyncConnection, scope: str, budget: str, period: str, now: datetime
) -> bool:
    """Record that `budget` of `scope` warned in `period`; False when it had already."""
    row = {"scope": scope, "budget": budget, "period": period, "sent_at": now}
    try:
        async with conn.begin_nested():
            await conn.execute(insert(budget_warnings).values(**row))
    except IntegrityError:
        return False
    return True
