"""Migration 2 (the Edge API, RAWP §9): `sessions.last_activity_at`, usage records, edge tickets.

A database created at migration 2 or later gets these from `schema.metadata` directly
(migrations rule 1); this step brings a database created at migration 1 to the same shape.
"""

from __future__ import annotations

from sqlalchemy import DateTime, inspect, text
from sqlalchemy.ext.asyncio import AsyncConnection

from master.storage import schema


async def add_edge_tables(conn: AsyncConnection) -> None:
    columns = await conn.run_sync(
        lambda c: {col["name"] for col in inspect(c).get_columns("sessions")}
    )
    if "last_activity_at" not in columns:
        column_type = DateTime(timezone=True).compile(dialect=conn.dialect)
        await conn.execute(text(f"ALTER TABLE sessions ADD COLUMN last_activity_at {column_type}"))
    await conn.run_sync(
        lambda c: schema.metadata.create_all(
            c, tables=[schema.usage_records, schema.edge_tickets], checkfirst=True
        )
    )
