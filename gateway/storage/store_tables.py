"""The SQL plumbing the gateway's conversation store stands on (gateway.storage.conversation_store).

`StoreTables` holds the store's `Database` and the three ways its records are written and read:
an `ON CONFLICT` upsert (atomic against another replica writing at once: never a read then a
write), one row read, and the next `seq` of an ordered table. The records themselves are its
subclasses', one concern each: gateway.storage.session_records (what a gateway killed mid-turn
needs) and gateway.storage.conversation_store (bindings, channel settings, queued prompts).
"""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.dialects import postgresql, sqlite

from gateway.storage.store_db import Database
from rawp.clock import SYSTEM_CLOCK, Clock

ENGINES = {"sqlite": sqlite.insert, "postgresql": postgresql.insert}  # both speak ON CONFLICT


class StoreTables:
    def __init__(self, db: Database, clock: Clock = SYSTEM_CLOCK) -> None:
        self._db = db
        self._clock = clock
        self._insert = ENGINES[db.dialect]

    async def close(self) -> None:
        await self._db.dispose()

    @property
    def database(self) -> Database:
        """The store's database, for the other gateway tables in it (gateway.storage.web_logins)."""
        return self._db

    def _next_seq(self, table, sequence):
        """A `seq` after every other (gateway.storage.store_schema, migration 2): the sequence on
        PostgreSQL; on SQLite the write transaction holds the file's lock, so max + 1."""
        if self._db.is_sqlite:
            return select(func.coalesce(func.max(table.c.seq), 0) + 1).scalar_subquery()
        return sequence.next_value()

    async def _upsert(self, table, row: dict, keys: list[str], *, replace: list[str]) -> None:
        """Insert `row`; when a row with the same `keys` exists, set the `replace` columns
        (none: keep the existing row). One statement: atomic against another replica."""
        statement = self._insert(table).values(**row)
        if replace:
            changes = {name: statement.excluded[name] for name in replace}
            if "seq" in row:
                changes["seq"] = row["seq"]
            statement = statement.on_conflict_do_update(index_elements=keys, set_=changes)
        else:
            statement = statement.on_conflict_do_nothing(index_elements=keys)
        async with self._db.write() as conn:
            await conn.execute(statement)

    async def _one(self, query):
        async with self._db.read() as conn:
            return (await conn.execute(query)).mappings().first()
