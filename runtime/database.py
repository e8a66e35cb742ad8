"""One way to open a database for every RAWP program (issue 29 §1): the master's
(master.storage.db) and the gateway's conversation store (gateway.storage.store_db). SQLite by
default, PostgreSQL (asyncpg) by URL for several replicas. Only a process with a database imports
it.

Rules:

1. A target is a path (an SQLite file) or a URL string (`postgresql+asyncpg://…`,
   `sqlite+aiosqlite:///…`). A string without `://` is a path. A URL without a driver
   (`postgresql://`, `sqlite:///`) gets the async one the project ships (asyncpg, aiosqlite).
2. On SQLite a writer waits for another's write (`SQLITE_TIMEOUT_S`) instead of failing; the
   file runs in WAL mode, with the program's own pragmas (`SQLite`), each run again for as long
   when it finds the file locked (SQLite's own wait does not cover turning a file into WAL).
   A private file is created with mode 0600 before SQLite opens it with the umask's. An
   in-memory database lives as long as its one connection: the pool keeps exactly one, and
   callers take turns with it.
3. `SQLite.explicit_begin`: the driver's own transaction handling is off and this module
   begins each transaction (SQLAlchemy's documented recipe): a `write()` begins with
   `BEGIN IMMEDIATE`, taking the file's write lock before its first read, so a read-then-write
   (an upsert, a migration) is never turned into SQLITE_BUSY half way; a `read()` runs each
   statement on its own and never blocks a writer (WAL). Without it `begin()`, `read()` and
   `write()` are all the driver's transaction.
4. On PostgreSQL the pool checks a connection before use: a replica outlives a server restart.
5. A URL is never put in an error message: it may hold a password. A URL that names no database
   SQLAlchemy can use is a `DatabaseError` with one line saying what to fix.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.pool import AsyncAdaptedQueuePool
from tenacity import AsyncRetrying, retry_if_exception, stop_after_delay, wait_exponential

SQLITE_TIMEOUT_S = 30  # rule 2: a writer waits this long for another's write to end
ASYNC_DRIVERS = {
    "postgresql": "postgresql+asyncpg",
    "postgres": "postgresql+asyncpg",
    "sqlite": "sqlite+aiosqlite",
}
_BEGIN = "rawp_sqlite_begin"  # the execution option naming a connection's BEGIN (rule 3)


class DatabaseError(Exception):
    """The database cannot be opened; the message says why, without the URL (rule 5)."""


@dataclass(frozen=True)
class SQLite:
    """How a program uses an SQLite file (rules 2–3)."""

    pragmas: tuple[str, ...] = ("PRAGMA journal_mode=WAL",)
    explicit_begin: bool = False
    private: bool = False


def sqlite_url(path: Path | str) -> str:
    if str(path) == ":memory:":
        return "sqlite+aiosqlite://"
    return f"sqlite+aiosqlite:///{Path(path).resolve()}"


def target_url(target: Path | str) -> str:
    """Rule 1: the SQLAlchemy URL of a path or a URL."""
    if isinstance(target, str) and "://" in target:
        return target
    return sqlite_url(target)


def redacted(url: str) -> str:
    """The URL without its password, for log lines."""
    return make_url(url).render_as_string(hide_password=True)


def parse(target: Path | str, what: str = "the database") -> URL:
    """Rule 1's URL, with its async driver; DatabaseError when it is not a URL."""
    try:
        parsed = make_url(target_url(target))
    except ArgumentError:
        raise DatabaseError(
            f"{what} URL is not an SQLAlchemy URL (e.g. postgresql+asyncpg://user@host:5432/name)"
        ) from None
    if parsed.drivername in ASYNC_DRIVERS:
        parsed = parsed.set(drivername=ASYNC_DRIVERS[parsed.drivername])
    return parsed


class Database:
    """One async engine. `begin()` / `write()` give a connection inside one transaction,
    committed on success; `read()` one for statements that only read (rule 3)."""

    def __init__(
        self, target: Path | str, sqlite: SQLite = SQLite(), *, what: str = "the database"
    ) -> None:
        parsed = parse(target, what)
        self.url = parsed.render_as_string(hide_password=False)
        self.dialect = parsed.get_backend_name()  # "sqlite" | "postgresql" | …
        self.sqlite = sqlite
        self.engine: AsyncEngine = _engine(parsed, sqlite, what)

    @property
    def is_sqlite(self) -> bool:
        return self.dialect == "sqlite"

    def begin(self):
        """`async with db.begin() as conn`: one transaction, committed on success."""
        return self.write()

    def read(self):
        return self.engine.begin()

    @asynccontextmanager
    async def write(self) -> AsyncIterator[AsyncConnection]:
        """`async with db.write() as conn`: one write transaction, committed on success."""
        async with self.engine.connect() as conn:
            if self.sqlite.explicit_begin:
                await conn.execution_options(**{_BEGIN: "BEGIN IMMEDIATE"})
            async with conn.begin():
                yield conn

    def connect(self):
        return self.engine.connect()

    async def dispose(self) -> None:
        await self.engine.dispose()


def _engine(parsed: URL, sqlite: SQLite, what: str) -> AsyncEngine:
    kwargs: dict = {}
    if parsed.get_backend_name() == "sqlite":
        if sqlite.private:
            _create_private_file(parsed.database)
        kwargs["connect_args"] = {"timeout": SQLITE_TIMEOUT_S}
        if not parsed.database or parsed.database == ":memory:":
            kwargs |= {"poolclass": AsyncAdaptedQueuePool, "pool_size": 1, "max_overflow": 0}
    else:
        kwargs["pool_pre_ping"] = True  # rule 4
    try:
        engine = create_async_engine(parsed, **kwargs)
    except (ArgumentError, NoSuchModuleError, ImportError) as exc:
        raise DatabaseError(
            f"{what} URL names a database this program cannot use "
            f"({parsed.drivername}): use sqlite+aiosqlite:///path or "
            f"postgresql+asyncpg://…  ({type(exc).__name__})"
        ) from None
    except Exception as exc:  # e.g. a sync driver given to the async engine
        raise DatabaseError(  # the type only: a driver's message might quote the URL
            f"{what} URL cannot be used ({parsed.drivername}, "
            f"{type(exc).__name__}): use an async driver such as postgresql+asyncpg"
        ) from None
    if parsed.get_backend_name() == "sqlite":
        event.listen(engine.sync_engine, "connect", _sqlite_connect(sqlite))
        if sqlite.explicit_begin:
            event.listen(engine.sync_engine, "begin", _sqlite_begin)
    return engine


def _create_private_file(database: str | None) -> None:
    """Rule 2: the file exists with mode 0600 before SQLite creates it with the umask's."""
    if not database or database == ":memory:":
        return
    path = Path(database)
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))


def _sqlite_connect(sqlite: SQLite):
    def on_connect(dbapi_connection, _record) -> None:
        if sqlite.explicit_begin:  # rule 3: `_sqlite_begin` decides, DDL runs inside too
            dbapi_connection.isolation_level = None
        # On the driver's own connection (SQLAlchemy's documented way to await in a pool event),
        # so a retry waits without holding up the event loop.
        dbapi_connection.run_async(lambda driver: _run_pragmas(driver, sqlite.pragmas))

    return on_connect


def _locked(exc: BaseException) -> bool:
    return getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_BUSY  # "database is locked"


async def _run_pragmas(driver, pragmas: tuple[str, ...]) -> None:
    """Rule 2: a pragma that finds the file locked is run again until `SQLITE_TIMEOUT_S`.
    Turning a file into WAL needs the file to itself, and SQLite answers "database is locked" at
    once, without its busy timeout, while another connection holds the write lock of a file not
    yet in WAL mode (four replicas starting on one new file)."""
    for pragma in pragmas:
        async for attempt in AsyncRetrying(
            retry=retry_if_exception(_locked),
            wait=wait_exponential(multiplier=0.005, max=0.25),
            stop=stop_after_delay(SQLITE_TIMEOUT_S),
            reraise=True,
        ):
            with attempt:
                cursor = await driver.execute(pragma)
                await cursor.close()


def _sqlite_begin(conn) -> None:
    # A write begins IMMEDIATE (rule 3). A read is one SELECT, consistent on its own: it runs
    # without BEGIN (autocommit), one round trip to SQLite's thread fewer.
    mode = conn.get_execution_options().get(_BEGIN)
    if mode:
        conn.exec_driver_sql(mode)
