"""The conversation store's migrations (gateway.storage.store_schema) and how it is opened
(gateway.storage.store_db), on a real SQLite file and a real PostgreSQL (issue 19 §1): a file made
by the raw-SQLite gateway keeps its rows, replicas opening one new database at once migrate it
once, a failing step changes nothing, and a bad URL is one line that never shows the URL."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys

import pytest
from sqlalchemy import inspect, select

from gateway.platform import ConversationRef
from gateway.storage.conversation_store import INTENT, ConversationStore, StoreError
from gateway.storage.store_db import Database
from gateway.storage.store_schema import MIGRATIONS, conversations, head, migrate, schema_version
from tests.gateway import store_support
from tests.gateway.store_support import drop_postgres_database, fresh_postgres_database
from tests.support import Processes

store_target = store_support.store_target  # SQLite and PostgreSQL

# What the raw-SQLite gateway (before issue 19) executed on every open, verbatim.
OLD_SCHEMA = """
CREATE TABLE IF NOT EXISTS conversations (
    conversation_key TEXT PRIMARY KEY, platform TEXT NOT NULL, channel_id TEXT NOT NULL,
    thread_id TEXT, subject TEXT NOT NULL, session_id TEXT NOT NULL, node_id TEXT NOT NULL,
    agent_name TEXT NOT NULL, created_at TEXT NOT NULL, ended INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS conversations_by_channel
    ON conversations (platform, channel_id, subject, ended);
CREATE INDEX IF NOT EXISTS conversations_by_session ON conversations (session_id);
CREATE TABLE IF NOT EXISTS cursors (
    session_id TEXT PRIMARY KEY, last_message_id TEXT NOT NULL, updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS posts (
    session_id TEXT NOT NULL, post_key TEXT NOT NULL, message_id TEXT, created_at TEXT NOT NULL,
    PRIMARY KEY (session_id, post_key)
);
CREATE TABLE IF NOT EXISTS turn_origins (
    session_id TEXT NOT NULL, turn_id TEXT NOT NULL, message_id TEXT, user_id TEXT,
    PRIMARY KEY (session_id, turn_id)
);
CREATE TABLE IF NOT EXISTS start_defaults (
    subject TEXT PRIMARY KEY, node_id TEXT NOT NULL, agent_name TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS queued_prompts (
    session_id TEXT NOT NULL, prompt_id TEXT NOT NULL, message_id TEXT, user_id TEXT,
    PRIMARY KEY (session_id, prompt_id)
);
CREATE TABLE IF NOT EXISTS channel_settings (
    platform TEXT NOT NULL, channel_id TEXT NOT NULL, busy_mode TEXT, updated_at TEXT NOT NULL,
    PRIMARY KEY (platform, channel_id)
);
"""
T = "2026-01-01T00:00:00.000Z"  # one instant: only the insertion order tells rows apart
OLD_ROWS = [
    f"INSERT INTO conversations VALUES ('k1', 'slack', 'C1', 'ts1', 'u', 's1', 'n', 'a', '{T}', 0)",
    f"INSERT INTO conversations VALUES ('k3', 'slack', 'C1', 'ts3', 'u', 's3', 'n', 'a', '{T}', 0)",
    f"INSERT INTO conversations VALUES ('k2', 'slack', 'C1', 'ts2', 'u', 's2', 'n', 'a', '{T}', 0)",
    f"INSERT INTO conversations VALUES ('k4', 'slack', 'C1', 'ts4', 'u', 's4', 'n', 'a', '{T}', 1)",
    f"INSERT INTO cursors VALUES ('s1', 'f-7', '{T}')",
    f"INSERT INTO posts VALUES ('s1', 'f-7/0', 'm-70', '{T}')",
    f"INSERT INTO posts VALUES ('s1', 'f-7/1', NULL, '{T}')",
    "INSERT INTO turn_origins VALUES ('s1', 't1', 'm-1', 'U1')",
    f"INSERT INTO start_defaults VALUES ('u', 'n', 'a', '{T}')",
    "INSERT INTO queued_prompts VALUES ('s1', 'p9', 'm-9', 'U1')",
    "INSERT INTO queued_prompts VALUES ('s1', 'p1', NULL, 'U2')",
    f"INSERT INTO channel_settings VALUES ('slack', 'C1', 'interrupt', '{T}')",
]


async def test_a_file_made_before_issue_19_opens_with_every_row(tmp_path):
    path = tmp_path / "conversations.sqlite3"
    with sqlite3.connect(path) as old:
        old.executescript(OLD_SCHEMA)
        for row in OLD_ROWS:
            old.execute(row)
    store = await ConversationStore.open(path)
    try:
        channel = ConversationRef("slack", "C1")
        # the newest of three made in one instant is the one inserted last (its rowid)
        assert (await store.latest_in_channel(channel, "u")).session_id == "s2"
        assert [b.session_id for b in await store.open_bindings()] == ["s1", "s3", "s2"]
        assert await store.cursor("s1") == "f-7"
        assert await store.recorded("s1", "f-7/0") == "m-70"
        assert await store.recorded("s1", "f-7/1") == INTENT
        assert await store.turn_origin("s1", "t1") == ("m-1", "U1")
        assert await store.last_start("u") == ("n", "a")
        assert await store.queued("s1") == [("p9", "m-9", "U1"), ("p1", None, "U2")]
        assert await store.busy_mode("slack", "C1") == "interrupt"
        # and the migrated tables go on: new rows come after the old ones
        await store.record_queued("s1", "p0", None, None)
        assert [p for p, _, _ in await store.queued("s1")] == ["p9", "p1", "p0"]
        await store.bind(
            ConversationRef("slack", "C1", "ts5"),
            subject="u",
            session_id="s5",
            node_id="n",
            agent_name="a",
        )
        assert [b.session_id for b in await store.open_bindings()][-1] == "s5"
    finally:
        await store.close()
    db = Database.open(path)
    try:
        async with db.read() as conn:  # the ended one stays, marked ended (a boolean now)
            ended = select(conversations.c.session_id, conversations.c.ended)
            assert (await conn.execute(ended.order_by(conversations.c.seq))).all() == [
                ("s1", False),
                ("s3", False),
                ("s2", False),
                ("s4", True),
                ("s5", False),  # bound after the migration: after them all
            ]
        assert await migrate(db) == []  # at head: nothing more to do
        assert await _versions(db) == [number for number, _, _ in MIGRATIONS]
    finally:
        await db.dispose()


@pytest.mark.postgres
async def test_the_old_tables_on_postgresql_migrate_with_their_rows():
    """The old DDL is portable: the same migration path runs on PostgreSQL."""
    url, name = await fresh_postgres_database()
    try:
        db = Database.open(url)
        try:
            async with db.write() as conn:
                for statement in [*OLD_SCHEMA.split(";"), *OLD_ROWS]:
                    if statement.strip():
                        await conn.exec_driver_sql(statement)
            assert await migrate(db) == [number for number, _, _ in MIGRATIONS]
        finally:
            await db.dispose()
        store = await ConversationStore.open(url)
        try:
            assert {b.session_id for b in await store.open_bindings()} == {"s1", "s2", "s3"}
            assert await store.recorded("s1", "f-7/1") == INTENT
            assert sorted(await store.queued("s1")) == [("p1", None, "U2"), ("p9", "m-9", "U1")]
            await store.record_queued("s1", "p0", None, None)  # the sequence goes on after them
            assert [p for p, _, _ in await store.queued("s1")][-1] == "p0"
        finally:
            await store.close()
    finally:
        await drop_postgres_database(name)


async def test_replicas_opening_one_new_database_at_once_migrate_it_once(store_target):
    stores = await asyncio.gather(*(ConversationStore.open(store_target) for _ in range(4)))
    try:
        thread = ConversationRef("discord", "c", "t")
        await stores[0].bind(thread, subject="u", session_id="s1", node_id="n", agent_name="a")
        for store in stores:
            assert (await store.get(thread)).session_id == "s1"
    finally:
        for store in stores:
            await store.close()
    db = Database.open(store_target)
    try:
        assert await _versions(db) == [number for number, _, _ in MIGRATIONS]
    finally:
        await db.dispose()


async def test_a_failing_migration_leaves_the_database_as_it_was(store_target):
    async def half_done(conn):
        await conn.exec_driver_sql("CREATE TABLE half_done (x INTEGER)")
        raise RuntimeError("step failed")

    await (await ConversationStore.open(store_target)).close()  # at head
    db = Database.open(store_target)
    try:
        with pytest.raises(RuntimeError, match="step failed"):
            await migrate(db, [*MIGRATIONS, (head() + 1, "fails half way", half_done)])
        async with db.read() as conn:
            tables = set(await conn.run_sync(lambda c: inspect(c).get_table_names()))
        assert "half_done" not in tables  # the step's own DDL rolled back with it
        assert await _versions(db) == [number for number, _, _ in MIGRATIONS]
    finally:
        await db.dispose()


@pytest.mark.parametrize(
    "url, says",
    [
        ("nonsense://user:hunter2-secret@host/db", "cannot use (nonsense)"),
        ("mysql+aiomysql://user:hunter2-secret@host/db", "cannot use (mysql+aiomysql)"),
        ("postgresql+asyncpg://user:hunter2-secret@127.0.0.1:1/db", "could not open"),
        ("sqlite+aiosqlite:////proc/no-such-dir/c.sqlite3", "could not open"),
    ],
)
async def test_a_url_that_cannot_be_used_is_one_line_without_the_url(url, says):
    with pytest.raises(StoreError) as raised:
        await ConversationStore.open(url)
    message = str(raised.value)
    assert says in message and "\n" not in message
    assert "hunter2" not in message and "user" not in message


def _gateway_env(tmp_path) -> dict[str, str]:
    return {
        "RAWP_EDGE_SECRET": "s" * 40,
        "RAWP_MASTER_URL": "http://127.0.0.1:9",  # nothing answers: it waits
        "DISCORD_BOT_TOKEN": "",
        "SLACK_BOT_TOKEN": "",
        "RAWP_GATEWAY_DATABASE_URL": "",
        "HOME": str(tmp_path),
    }


def test_rawp_gateway_with_a_bad_database_url_says_so_in_one_line(tmp_path):
    url = "postgresql+asyncpg://rawp:hunter2-secret@127.0.0.1:1/rawp"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "rawp_app.cli",
            "gateway",
            "--state-dir",
            str(tmp_path),
            "--database-url",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **_gateway_env(tmp_path)},
        stdin=subprocess.PIPE,
    )
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert len(output.strip().splitlines()) == 1, output
    assert "could not open the conversation database" in output
    assert "hunter2" not in output and "Traceback" not in output


@pytest.mark.postgres
async def test_rawp_gateway_opens_its_store_on_postgresql(tmp_path):
    url, name = await fresh_postgres_database()
    processes = Processes()
    try:
        secret_url = url.replace("postgres@", "postgres:hunter2-secret@", 1)  # trust: ignored
        gateway = processes.rawp(
            "gateway",
            "--state-dir",
            str(tmp_path),
            "--database-url",
            secret_url,
            env=_gateway_env(tmp_path),
            stdin=subprocess.PIPE,
        )
        db = Database.open(url)
        try:
            for _ in range(600):  # the gateway migrates the new database, then waits for a master
                async with db.read() as conn:
                    tables = await conn.run_sync(lambda c: inspect(c).get_table_names())
                if schema_version.name in tables:
                    break
                assert gateway.poll() is None, gateway.stdout.read().decode()
                await asyncio.sleep(0.1)
            assert await _versions(db) == [number for number, _, _ in MIGRATIONS]
        finally:
            await db.dispose()
        assert not (tmp_path / "conversations.sqlite3").exists()  # the URL, not the file
        processes.close()
        assert b"hunter2" not in gateway.stdout.read()
    finally:
        processes.close()
        await drop_postgres_database(name)


async def _versions(db: Database) -> list[int]:
    async with db.read() as conn:
        query = select(schema_version.c.version).order_by(schema_version.c.version)
        return list((await conn.execute(query)).scalars())
