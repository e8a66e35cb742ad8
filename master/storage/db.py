"""Opening the master's database: SQLite by default, PostgreSQL by URL (architecture: storage),
through the project's one way to open a database (runtime.database).

`Database` owns one async engine. Services take a connection with `async with db.begin()` (one
transaction) and pass it to the query functions of the storage modules. On SQLite the master
turns foreign keys on and keeps the driver's own transactions (runtime.database rule 3: one
process, no immediate writes needed).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy.engine import make_url

from runtime import database

SQLITE_FILE = "master.db"
MASTER_SQLITE = database.SQLite(pragmas=("PRAGMA foreign_keys=ON", "PRAGMA journal_mode=WAL"))


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


class Database(database.Database):
    def __init__(self, url: str) -> None:
        super().__init__(url, MASTER_SQLITE)
