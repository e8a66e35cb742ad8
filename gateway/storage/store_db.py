"""Opening the gateway's conversation database: an SQLite file by default, any SQLAlchemy URL
(PostgreSQL through asyncpg for several replicas) when one is given (issue 19 §1).

Rules:

1. A target is a path (an SQLite file) or a URL string (`postgresql+asyncpg://…`,
   `sqlite+aiosqlite:///…`). A string without `://` is a path. A URL without a driver
   (`postgresql://`, `sqlite:///`) gets the async one this package ships (asyncpg, aiosqlite).
2. An SQLite file is created with mode 0600 before SQLite opens it (it names users and
   sessions: nobody else needs to read it) and is used in WAL mode.
3. Every write is one transaction (`Database.write()`). On SQLite a write transaction begins
   with `BEGIN IMMEDIATE`: it takes the file's write lock before its first read, so a
   read-then-write (an upsert, a migration) is never turned into SQLITE_BUSY half way, and two
   processes on one file wait for each other (30 s) instead of failing. Reads begin deferred
   and never block a writer (WAL).
4. A URL is never logged nor put in an error message: it may hold a password. A URL that names
   no database SQLAlchemy knows, or a server that does not answer, is a `StoreError` with one
   line saying what to fix.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.pool import AsyncAdaptedQueuePool

SQLITE_TIMEOUT_S = 30  # a writer waits this long for another process's write to end
ASYNC_DRIVERS = {
    "postgresql": "postgresql+asyncpg",
    "postgres": "postgresql+asyncpg",
    "sqlite": "sqlite+aiosqlite",
}
_BEGIN = "rawp_sqlite_begin"  # the execution option naming a connection's BEGIN mode


class StoreError(Exception):
    """The conversation database cannot be opened; the message says why, without the URL."""


def sqlite_url(path: Path | str) -> str:
    if str(path) == ":memory:":
        return "sqlite+aiosqlite://"
    return f"sqlite+aiosqlite:///{Path(path).resolve()}"


def target_url(target: Path | str) -> str:
    """Rule 1: the SQLAlchemy URL of a path or a URL."""
    if isinstance(target, str) and "://" in target:
        return target
    return sqlite_url(target)


class Database:
    """One async engine; `write()` gives a connection inside one write transaction, `read()`
    one for reading."""

    def __init__(self, engine: AsyncEngine, dialect: str) -> None:
        self.engine = engine
        self.dialect = dialect  # "sqlite" | "postgresql" | …

    @property
    def is_sqlite(self) -> bool:
        return self.dialect == "sqlite"

    @classmethod
    def open(cls, target: Path | str) -> Database:
        url = target_url(target)
        try:
            parsed = make_url(url)
            if parsed.drivername in ASYNC_DRIVERS:
                parsed = parsed.set(drivername=ASYNC_DRIVERS[parsed.drivername])
            dialect = parsed.get_backend_name()
        except ArgumentError:
            raise StoreError(
                "the conversation database URL is not an SQLAlchemy URL "
                "(e.g. postgresql+asyncpg://user@host:5432/name)"
            ) from None
        kwargs: dict = {}
        if dialect == "sqlite":
            _create_private_file(parsed.database)
            kwargs["connect_args"] = {"timeout": SQLITE_TIMEOUT_S}
            if not parsed.database or parsed.database == ":memory:":
                # An in-memory database lives as long as its one connection: keep exactly
                # one, and let callers take turns with it (a shared one would mix transactions).
                kwargs |= {"poolclass": AsyncAdaptedQueuePool, "pool_size": 1, "max_overflow": 0}
        else:
            kwargs["pool_pre_ping"] = True  # a replica outlives a database restart
        try:
            engine = create_async_engine(parsed, **kwargs)
        except (ArgumentError, NoSuchModuleError, ImportError) as exc:
            raise StoreError(
                f"the conversation database URL names a database this gateway cannot use "
                f"({parsed.drivername}): use sqlite+aiosqlite:///path or "
                f"postgresql+asyncpg://…  ({type(exc).__name__})"
            ) from None
        except Exception as exc:  # e.g. a sync driver given to the async engine
            raise StoreError(  # the type only: a driver's message might quote the URL
                f"the conversation database URL cannot be used ({parsed.drivername}, "
                f"{type(exc).__name__}): use an async driver such as postgresql+asyncpg"
            ) from None
        if dialect == "sqlite":
            event.listen(engine.sync_engine, "connect", _sqlite_connect)
            event.listen(engine.sync_engine, "begin", _sqlite_begin)
        return cls(engine, dialect)

    def read(self):
        """`async with db.read() as conn`: for statements that only read (on SQLite each
        runs on its own, without BEGIN)."""
        return self.engine.begin()

    @asynccontextmanager
    async def write(self) -> AsyncIterator[AsyncConnection]:
        """`async with db.write() as conn`: one write transaction, committed on success
        (rule 3: `BEGIN IMMEDIATE` on SQLite)."""
        async with self.engine.connect() as conn:
            await conn.execution_options(**{_BEGIN: "BEGIN IMMEDIATE"})
            async with conn.begin():
                yield conn

    async def dispose(self) -> None:
        await self.engine.dispose()


def _create_private_file(database: str | None) -> None:
    """Rule 2: the file exists with mode 0600 before SQLite creates it with the umask's."""
    if not database or database == ":memory:":
        return
    path = Path(database)
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))


def _sqlite_connect(dbapi_connection, _record) -> None:
    # The driver's own transaction handling is turned off so that `_sqlite_begin` decides
    # (SQLAlchemy's documented recipe for SQLite): DDL then runs inside the transaction too.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    # In WAL mode NORMAL syncs at checkpoints, not at every commit: a commit survives the
    # process being killed (what the posting rules guard against, issue 14 §4), and only a
    # power loss can take the last few back. One fsync per chunk posted is not worth that.
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def _sqlite_begin(conn) -> None:
    # A write begins IMMEDIATE (rule 3). A read is one SELECT, consistent on its own: it runs
    # without BEGIN (autocommit), one round trip to SQLite's thread fewer.
    mode = conn.get_execution_options().get(_BEGIN)
    if mode:
        conn.exec_driver_sql(mode)
