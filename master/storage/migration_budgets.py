"""Migration 4 (issue 16 §4): the `budget_warnings` table and the usage indexes budgets read by.

A database created at migration 4 or later gets them from `schema.metadata` directly
(migrations rule 1); this step brings an older database to the same shape.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncConnection

from master.storage import schema

NEW_INDEXES = ("ix_usage_user_time", "ix_usage_session")


async def add_budget_tables(conn: AsyncConnection) -> None:
    def create(sync_conn) -> None:
        schema.metadata.create_all(sync_conn, tables=[schema.budget_warnings], checkfirst=True)
        for index in schema.usage_records.indexes:
            if index.name in NEW_INDEXES:
                index.create(sync_conn, checkfirst=True)

    await conn.run_sync(create)
