"""Reaching a database (runtime.database): why it cannot be reached, in one line, and waiting
for it. The master waits for its database at start and words its outages so; any program
opening a database through the runtime may.

Issue 34 §2: a master started before its PostgreSQL (compose, systemd) or with a wrong password
must say so in one line that names the database — host, port and the cause — and never the
password nor a traceback. Rules:

1. `why(exc)` names the cause when `exc` (or what it wraps) is about reaching the database:
   the name does not resolve, nothing answers, no answer in time, the server is still starting,
   authentication failed, the database is missing. Anything else is not ours to explain: None.
2. The words are ours, never the driver's message, so nothing from the URL but its host, port
   and database name is shown.
3. `wait_for_database` waits up to a bounded time for the causes that pass by themselves (a
   server not up yet); authentication and a missing database do not pass by waiting and stop
   the wait at once. The first wait is logged once, and so is the database answering after it.
4. A loop that retries by itself while the master runs (the takeover sweep) logs an outage
   once when it starts and once when it ends (`Outage`), not a traceback each round.
"""

from __future__ import annotations

import asyncio
import logging
import socket

import sqlalchemy as sa
from sqlalchemy.engine import make_url

from runtime.database import Database

log = logging.getLogger("rawp.master")

# PostgreSQL SQLSTATEs (asyncpg puts them on its exceptions as `sqlstate`).
AUTHENTICATION = {"28000", "28P01"}  # invalid authorization, wrong password
MISSING = {"3D000"}  # invalid catalog name: no such database
STARTING = {"57P03"}  # cannot connect now: the server is starting up or shutting down
FINAL = ("authentication failed", "database missing")  # rule 3: waiting does not help


class DatabaseUnreachable(Exception):
    """The program cannot use its database; the message is the one line to show (rule 2)."""


def where(url: str) -> str:
    """`host:port/name` of a server URL, the file of an SQLite one; never the password."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        return parsed.database or "(memory)"
    port = parsed.port or 5432
    return f"{parsed.host or 'localhost'}:{port}/{parsed.database or ''}"


def _chain(exc: BaseException):
    """`exc` and what it wraps: SQLAlchemy's `orig`, then causes and contexts."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        current = todo.pop(0)
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        todo += [getattr(current, "orig", None), current.__cause__, current.__context__]


def why(exc: BaseException, user: str | None = None) -> str | None:
    """Rule 1: the cause in words, or None when `exc` is not about reaching the database."""
    for current in _chain(exc):
        state = getattr(current, "sqlstate", None)
        if state in AUTHENTICATION:
            return f"authentication failed (user {user})" if user else "authentication failed"
        if state in MISSING:
            return "database missing"
        if state in STARTING:
            return "the server is starting up"
        if isinstance(current, socket.gaierror):
            return "name not resolved"
        if isinstance(current, TimeoutError):
            return "unreachable (no answer in time)"
        if isinstance(current, ConnectionRefusedError):
            return "unreachable (connection refused)"
        if isinstance(current, OSError):
            return f"unreachable ({current.strerror or type(current).__name__})"
        if type(current).__name__ in {"ConnectionDoesNotExistError", "InterfaceError"}:
            return "unreachable (the connection was lost)"
    return None


def describe(url: str, exc: BaseException) -> str | None:
    """The one line for `exc`, naming the database; None when `exc` is not about reaching it."""
    cause = why(exc, make_url(url).username)
    if cause is None:
        return None
    return f"cannot use the database at {where(url)}: {cause}"


async def check(db: Database) -> None:
    """One connection and `SELECT 1`; raises what the driver raised."""
    async with db.connect() as conn:
        await conn.execute(sa.text("SELECT 1"))


async def wait_for_database(db: Database, timeout_s: float, interval_s: float = 1.0) -> None:
    """Rule 3: return once the database answers; `DatabaseUnreachable` with the one line when
    it cannot be used, or did not answer within `timeout_s` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    said = False
    while True:
        try:
            await check(db)
        except Exception as exc:
            cause = why(exc, make_url(db.url).username)
            if cause is None:
                raise
            line = f"cannot use the database at {where(db.url)}: {cause}"
            final = cause.startswith(FINAL)
            left = deadline - loop.time()
            if final or left <= 0:
                waited = "" if final else f" (waited {timeout_s:g} s)"
                raise DatabaseUnreachable(line + waited) from None
            if not said:
                log.warning(
                    "waiting up to %g s for the database at %s (%s)",
                    timeout_s,
                    where(db.url),
                    cause,
                )
                said = True
            await asyncio.sleep(min(interval_s, left))
            continue
        if said:
            log.info("the database at %s answers", where(db.url))
        return


class Outage:
    """Rule 4: one line when a retrying loop starts failing, one when it works again."""

    def __init__(self, what: str, url: str) -> None:
        self.what = what
        self.url = url
        self.down = False

    def failed(self, exc: BaseException) -> None:
        if self.down:
            return
        self.down = True
        line = describe(self.url, exc)
        if line is None:  # not the database (Redis, a bug): its traceback, once per outage
            log.warning("%s failed; retrying", self.what, exc_info=exc)
        else:
            log.warning("%s: %s; retrying until it answers", self.what, line)

    def worked(self) -> None:
        if self.down:
            self.down = False
            log.info("%s works again", self.what)
