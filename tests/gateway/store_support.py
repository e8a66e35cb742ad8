"""Where a conversation store test keeps its store: an SQLite file, or a fresh database on the
real PostgreSQL named by RAWP_TEST_POSTGRES_URL (one per test, dropped after it, so parallel
workers never share tables). Where no PostgreSQL answers, its parameter is skipped with the
reason printed, and fails under CI (tests.support.missing_service)."""

from __future__ import annotations

import os
import secrets

import pytest

from tests.support import missing_service

ADMIN_URL = os.environ.get("RAWP_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
ENGINES = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


async def _admin(sql: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(ADMIN_URL, timeout=5)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


async def fresh_postgres_database():
    """(url, name) of a new empty database; skipped (failed under CI) without PostgreSQL."""
    name = f"rawp_gw_store_{secrets.token_hex(5)}"
    try:
        await _admin(f'CREATE DATABASE "{name}"')
    except Exception as exc:  # no server, refused, no permission
        missing_service(f"PostgreSQL at {ADMIN_URL} did not answer: {exc!r}")
    base = ADMIN_URL.rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://", 1)
    return f"{base}/{name}", name


async def drop_postgres_database(name: str) -> None:
    await _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=ENGINES)
async def store_target(request, tmp_path):
    """What `ConversationStore.open` takes: a path (SQLite) or a PostgreSQL URL."""
    if request.param == "sqlite":
        yield tmp_path / "gw" / "conversations.sqlite3"
        return
    url, name = await fresh_postgres_database()
    try:
        yield url
    finally:
        await drop_postgres_database(name)
