"""Migration 3 (issue 15 §4): the `approval_audit` table and its indexes.

A database created at migration 3 or later gets it from `schema.metadata` directly (migrations
rule 1); this step brings an older database to the same shape.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncConnection

from master.storage import schema


async def add_audit_table(conn: AsyncConnection) -> None:
    await conn.run_sync(
        lambda c: schema.metadata.create_all(c, tables=[schema.approval_audit], checkfirst=True)
    )
