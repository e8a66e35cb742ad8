"""Storage: migrations recorded in `schema_version`, the signing key file, the SQLite default."""

from __future__ import annotations

import stat

from sqlalchemy import Column, Integer, MetaData, String, Table, inspect, select, text

from master.services.keys import KEY_FILE, load_or_create_signing_key
from master.settings import MasterSettings
from master.storage.db import Database, database_url
from master.storage.migrations import MIGRATIONS, head, migrate
from master.storage.schema import schema_version
from master.wiring import build_services
from rawp.clock import FakeClock


async def _versions(db: Database) -> list[int]:
    async with db.connect() as conn:
        return sorted((await conn.execute(select(schema_version.c.version))).scalars())


async def test_a_new_database_is_created_at_head_and_migrating_again_is_a_no_op(database_url):
    db = Database(database_url)
    try:
        async with db.begin() as conn:
            await conn.execute(text("DROP TABLE IF EXISTS later_table"))
        await migrate(db)  # the fixture's database may hold the schema already (PostgreSQL)
        assert await _versions(db) == [n for n, _, _ in MIGRATIONS]
        assert await migrate(db) == []
        async with db.connect() as conn:
            tables = await conn.run_sync(lambda c: set(inspect(c).get_table_names()))
        assert {"users", "nodes", "pairing_tokens", "refresh_tokens", "config_scopes"} <= tables
        assert "sessions" in tables
    finally:
        await db.dispose()


async def test_pending_migrations_run_in_order_once(database_url):
    db = Database(database_url)
    later = MetaData()
    Table("later_table", later, Column("id", Integer, primary_key=True), Column("x", String(5)))

    async def add_table(conn):
        await conn.run_sync(later.create_all)

    extended = [*MIGRATIONS, (head() + 1, "add later_table", add_table)]
    try:
        async with db.begin() as conn:
            await conn.execute(text("DROP TABLE IF EXISTS later_table"))
        await migrate(db)
        assert await migrate(db, extended) == [head() + 1]
        assert await migrate(db, extended) == []
        assert await _versions(db) == [*(n for n, _, _ in MIGRATIONS), head() + 1]
        async with db.connect() as conn:
            assert await conn.run_sync(lambda c: inspect(c).has_table("later_table"))
    finally:
        async with db.begin() as conn:
            await conn.execute(text("DROP TABLE IF EXISTS later_table"))
            await conn.execute(schema_version.delete().where(schema_version.c.version > head()))
        await db.dispose()


def test_signing_key_is_created_once_with_mode_0600(tmp_path):
    state = tmp_path / "new-state"
    first = load_or_create_signing_key(state)
    path = state / KEY_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert b"PRIVATE KEY" in path.read_bytes()
    second = load_or_create_signing_key(state)
    assert second.kid == first.kid


def test_default_database_is_sqlite_in_the_state_dir(tmp_path):
    url = database_url(None, tmp_path)
    assert url == f"sqlite+aiosqlite:///{(tmp_path / 'master.db').resolve()}"
    assert database_url("postgresql+asyncpg://h/db", tmp_path) == "postgresql+asyncpg://h/db"


async def test_first_start_creates_the_sqlite_file(tmp_path):
    settings = MasterSettings(state_dir=tmp_path / "fresh")
    services = await build_services(settings, FakeClock())
    await services.close()
    assert (tmp_path / "fresh" / "master.db").is_file()
    assert (tmp_path / "fresh" / KEY_FILE).is_file()


def test_base_url():
    assert MasterSettings(state_dir=".", host="0.0.0.0", port=9).base_url == "http://0.0.0.0:9"
    tls = MasterSettings(state_dir=".", host="::1", port=9, tls_cert="c", tls_key="k")
    assert tls.base_url == "https://[::1]:9"
    assert (
        MasterSettings(state_dir=".", public_url="https://m.example/").base_url
        == "https://m.example"
    )
