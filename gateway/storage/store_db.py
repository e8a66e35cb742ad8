"""Opening the gateway's conversation database: an SQLite file by default, any SQLAlchemy URL
(PostgreSQL through asyncpg for several replicas) when one is given (issue 19 §1), through the
project's one way to open a database (runtime.database: its rules 1–5 are this store's).

Rules:

1. A target is a path (an SQLite file) or a URL string (runtime.database rule 1).
2. An SQLite file is created with mode 0600 before SQLite opens it (it names users and
   sessions: nobody else needs to read it) and is used in WAL mode.
3. Every write is one transaction (`Database.write()`). On SQLite a write transaction begins
   with `BEGIN IMMEDIATE` (runtime.database rule 3): a read-then-write (an upsert, a migration)
   is never turned into SQLITE_BUSY half way, and two processes on one file wait for each other
   (30 s) instead of failing. Reads begin deferred and never block a writer (WAL).
4. A URL is never logged nor put in an error message: it may hold a password. A URL that names
   no database SQLAlchemy knows, or a server that does not answer, is a `StoreError` with one
   line saying what to fix.
"""

from __future__ import annotations

from pathlib import Path

from runtime import database

# In WAL mode NORMAL syncs at checkpoints, not at every commit: a commit survives the process
# being killed (what the posting rules guard against, issue 14 §4), and only a power loss can
# take the last few back. One fsync per chunk posted is not worth that.
STORE_SQLITE = database.SQLite(
    pragmas=("PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL"),
    explicit_begin=True,
    private=True,
)


class StoreError(Exception):
    """The conversation database cannot be opened; the message says why, without the URL."""


class Database(database.Database):
    """One async engine; `write()` gives a connection inside one write transaction, `read()`
    one for reading."""

    @classmethod
    def open(cls, target: Path | str) -> Database:
        try:
            return cls(target, STORE_SQLITE, what="the conversation database")
        except database.DatabaseError as exc:
            raise StoreError(str(exc)) from None
