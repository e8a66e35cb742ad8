"""Usage records (E-WS-07) and their sums for node metrics (RAWP §9.2.2)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, insert, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from master.storage.schema import usage_records


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
    c = usage_records.c
    row = (
        await conn.execute(
            select(
                func.coalesce(func.sum(c.input_tokens), 0),
                func.coalesce(func.sum(c.output_tokens), 0),
                func.coalesce(func.sum(c.tool_invocations), 0),
                func.coalesce(func.sum(c.cost_usd), 0.0),
            ).where(c.node_id == node_id, c.recorded_at >= since)
        )
    ).one()
    return UsageSum(int(row[0]), int(row[1]), int(row[2]), float(row[3]))
