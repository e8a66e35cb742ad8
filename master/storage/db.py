"""Opening the master's database: SQLite by default, PostgreSQL by URL (architecture: storage).

`Database` owns one async engine. Services take a connection with `async with db.begin()` (one
transaction) and pass it to the query functions of the storage modules.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

SQLITE_FILE = "master.db"


def database_url(configured: str | None, state_dir: Path) -> str:
    """The configured URL, or an SQLite file in the state dir (created on first start)."""
    if configured:
        return configured
    return f"sqlite+aiosqlite:///{(state_dir / SQLITE_FILE).resolve()}"


def with_password(url: str | None, password: str | None) -> str | None:
    """`url` with `password` put in, escaped (issue 34 §3): a password holding @ % / : # ? is
    never read as part of the host or the path. None or empty: `url` as it is."""
    if not password or not url:
        return url
    return make_url(url).set(password=password).render_as_string(hide_password=False)


def utc(moment: datetime | None) -> datetime | None:
    """A stored time as aware UTC: SQLite hands back naive datetimes (schema module note)."""
    if moment is None:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def redacted(url: str) -> str:
    """The URL without its password, for log lines."""
    return make_url(url).render_as_string(hide_password=True)


class Database:
    def __init__(self, url: str) -> None:
        self.url = url
        self.is_sqlite = make_url(url).get_backend_name() == "sqlite"
        kwargs: dict = {}
        if self.is_sqlite:
            # Several writers in one process wait for each other instead of failing at once.
            kwargs["connect_args"] = {"timeout": 30}
        else:
            kwargs["pool_pre_ping"] = True
        self.engine: AsyncEngine = create_async_engine(url, **kwargs)
        if self.is_sqlite:
            event.listen(self.engine.sync_engine, "connect", _sqlite_pragmas)

    def begin(self):
        """`async with db.begin() as conn`: one transaction, committed on success."""
        return self.engine.begin()

    def connect(self):
        return self.engine.connect()

    async def dispose(self) -> None:
        await self.engine.dispose()


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.close()
