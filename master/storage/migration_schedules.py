"""Migration 5 (issue 30 §5): the `schedules` table of scheduled prompts.

A database created at migration 5 or later gets it from `schema.metadata` directly (migrations
rule 1); this step brings an older database to the same shape.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncConnection

from master.storage import schema


async def add_schedules_table(conn: AsyncConnection) -> None:
    await conn.run_sync(
        lambda c: schema.metadata.create_all(c, tables=[schema.schedules], checkfirst=True)
    )
