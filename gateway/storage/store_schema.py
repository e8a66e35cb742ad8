"""The conversation store's tables (SQLAlchemy Core, one schema for SQLite and PostgreSQL) and
their migrations, recorded in `gateway_schema_version` (issue 19 §1), run by the project's one
migration runner (runtime.migrate, the master's too).

Rules:

1. A database with none of these tables is new: the tables are created as they stand today
   and every migration is recorded as applied.
2. A database with tables but no version table was made by a gateway before issue 19 (raw
   SQLite): it runs every migration from 1, and keeps its rows.
3. Otherwise each migration not recorded runs, in order. Everything happens in one
   transaction (PostgreSQL and SQLite both roll DDL back), so a failed step leaves the database
   as it was.
4. Replicas that open one PostgreSQL at once do not race: the transaction first takes a
   transaction-scoped advisory lock (runtime.migrate rule 4, the runner the master's
   migrations share; key `LOCK_KEY`), so the others wait and then find the work done. On
   SQLite the write transaction's `BEGIN IMMEDIATE` is that lock (gateway.storage.store_db rule 3).
5. A change to the tables below ships with a new migration appended to `MIGRATIONS` that brings
   an existing database to the same shape. Numbers never change.

Why migration 2: SQLite's `rowid` gave the insertion order (the newest binding of a channel,
the queued prompts in the order sent) and `INSERT OR REPLACE` gave a replaced row a new one.
PostgreSQL has neither, so both tables get an explicit `seq` drawn from a sequence on
PostgreSQL and from `max(seq) + 1` under SQLite's write lock, and `ended` becomes a boolean.
"""

from __future__ import annotations

import logging

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Float,
    Index,
    Integer,
    MetaData,
    Sequence,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy.ext.asyncio import AsyncConnection

from runtime import migrate as migrate_runner
from runtime.migrate import Step, version_table

log = logging.getLogger("rawp.gateway.store")

metadata = MetaData()

schema_version = version_table("gateway_schema_version", metadata, String(40))

CONVERSATION_SEQ = Sequence("conversations_seq", metadata=metadata)
QUEUED_SEQ = Sequence("queued_prompts_seq", metadata=metadata)

# One row per chat conversation (gateway.storage.conversation_store), keyed by `conversation_key`.
conversations = Table(
    "conversations",
    metadata,
    Column("conversation_key", Text, primary_key=True),
    Column("platform", Text, nullable=False),
    Column("channel_id", Text, nullable=False),
    Column("thread_id", Text),
    Column("subject", Text, nullable=False),
    Column("session_id", Text, nullable=False),
    Column("node_id", Text, nullable=False),
    Column("agent_name", Text, nullable=False),
    Column("created_at", Text, nullable=False),
    Column("ended", Boolean, nullable=False, default=False),
    # Migration 2: the order bindings were made in (a re-bound thread takes a new one).
    Column("seq", BigInteger, CONVERSATION_SEQ, nullable=False),
)
Index(
    "conversations_by_channel",
    conversations.c.platform,
    conversations.c.channel_id,
    conversations.c.subject,
    conversations.c.ended,
)
Index("conversations_by_session", conversations.c.session_id)
Index("conversations_by_seq", conversations.c.seq)

cursors = Table(
    "cursors",
    metadata,
    Column("session_id", Text, primary_key=True),
    Column("last_message_id", Text, nullable=False),
    Column("updated_at", Text, nullable=False),
)

posts = Table(
    "posts",
    metadata,
    Column("session_id", Text, primary_key=True),
    Column("post_key", Text, primary_key=True),
    Column("message_id", Text),
    Column("created_at", Text, nullable=False),
)

turn_origins = Table(
    "turn_origins",
    metadata,
    Column("session_id", Text, primary_key=True),
    Column("turn_id", Text, primary_key=True),
    Column("message_id", Text),
    Column("user_id", Text),
)

start_defaults = Table(
    "start_defaults",
    metadata,
    Column("subject", Text, primary_key=True),
    Column("node_id", Text, nullable=False),
    Column("agent_name", Text, nullable=False),
    Column("updated_at", Text, nullable=False),
)

# Migration 2: `seq` (the order sent) is the key; (session, prompt) stays unique.
queued_prompts = Table(
    "queued_prompts",
    metadata,
    Column("seq", BigInteger().with_variant(Integer, "sqlite"), QUEUED_SEQ, primary_key=True),
    Column("session_id", Text, nullable=False),
    Column("prompt_id", Text, nullable=False),
    Column("message_id", Text),
    Column("user_id", Text),
    UniqueConstraint("session_id", "prompt_id", name="queued_prompts_once"),
)

channel_settings = Table(
    "channel_settings",
    metadata,
    Column("platform", Text, primary_key=True),
    Column("channel_id", Text, primary_key=True),
    Column("busy_mode", Text),
    Column("updated_at", Text, nullable=False),
)

# Migration 3 (issue 21): the web edge's one-time login links, by the SHA-256 of the token
# (never the token), and the per-day usage it has seen (the master keeps today's only).
web_logins = Table(
    "web_logins",
    metadata,
    Column("token_hash", String(64), primary_key=True),
    Column("subject", Text, nullable=False),
    Column("name", Text, nullable=False),
    Column("expires_at", Float, nullable=False),  # seconds since the epoch
)
Index("web_logins_by_expiry", web_logins.c.expires_at)

web_usage_days = Table(
    "web_usage_days",
    metadata,
    Column("subject", Text, primary_key=True),
    Column("node_id", Text, primary_key=True),
    Column("day", String(10), primary_key=True),  # YYYY-MM-DD, UTC
    Column("node_name", Text, nullable=False),
    Column("input_tokens", BigInteger, nullable=False),
    Column("output_tokens", BigInteger, nullable=False),
    Column("cost_usd", Float, nullable=False),
)

# Migration 4 (issue 28): the web edge's own prompts, read back by a reloaded page
# (gateway.storage.web_prompts): the newest few hundred per session and subject.
WEB_PROMPT_SEQ = Sequence("web_prompts_seq", metadata=metadata)
web_prompts = Table(
    "web_prompts",
    metadata,
    Column("seq", BigInteger().with_variant(Integer, "sqlite"), WEB_PROMPT_SEQ, primary_key=True),
    Column("session_id", Text, nullable=False),
    Column("subject", Text, nullable=False),
    Column("message_id", Text, nullable=False),  # the control.prompt.request's
    Column("text", Text, nullable=False),  # as the reader typed it
    Column("sent_at", Float, nullable=False),  # seconds since the epoch
    UniqueConstraint("session_id", "message_id", name="web_prompts_once"),
)
Index("web_prompts_by_session", web_prompts.c.session_id, web_prompts.c.subject, web_prompts.c.seq)
Index("web_prompts_by_age", web_prompts.c.sent_at)

# Migration 5 (issue 30 §1): the agent mode a session's owner chose from chat, by its chat name
# (`plan`, `ask`, `accept-edits`), so a restarted gateway still shows and re-sends it.
session_modes = Table(
    "session_modes",
    metadata,
    Column("session_id", Text, primary_key=True),
    Column("mode", Text, nullable=False),
    Column("updated_at", Text, nullable=False),
)

# Migration 6 (issue 30 §5): where a schedule was made from chat, by the master's schedule id,
# and which of its runs this gateway has already posted (gateway.storage.schedule_origins).
schedule_origins = Table(
    "schedule_origins",
    metadata,
    Column("schedule_id", Text, primary_key=True),
    Column("platform", Text, nullable=False),
    Column("channel_id", Text, nullable=False),
    Column("subject", Text, nullable=False),
    Column("posted_session_id", Text, nullable=False),  # '' until a run is posted
    Column("reported_missed", Integer, nullable=False),  # the master's missed_runs last told
    Column("created_at", Text, nullable=False),
)
Index("schedule_origins_by_platform", schedule_origins.c.platform, schedule_origins.c.subject)
# Migration 7 (issue 30 §1): the models a session's agent offers, the one it is on, and the one
# its owner chose from chat, so any replica answers `/rawp model` and its autocomplete, and a
# restarted gateway re-sends the chosen one. (6 is the schedule origins' number.)
session_models = Table(
    "session_models",
    metadata,
    Column("session_id", Text, primary_key=True),
    Column("offered", Text, nullable=False),  # JSON list of the model ids offered
    Column("current", Text),  # as the agent last announced it; None: its own default
    Column("chosen", Text),  # chosen from chat and confirmed by the agent; None: never
    Column("updated_at", Text, nullable=False),
)

# --- migrations ---------------------------------------------------------------------------


# Migration 1: the tables exactly as the raw-SQLite gateway made them (issues 10, 14, 16). On a
# file from before issue 19 it adds what an older file lacked, as that gateway did on open.
_V1 = [
    "CREATE TABLE IF NOT EXISTS conversations (conversation_key TEXT PRIMARY KEY, platform TEXT"
    " NOT NULL, channel_id TEXT NOT NULL, thread_id TEXT, subject TEXT NOT NULL, session_id TEXT"
    " NOT NULL, node_id TEXT NOT NULL, agent_name TEXT NOT NULL, created_at TEXT NOT NULL,"
    " ended INTEGER NOT NULL DEFAULT 0)",
    "CREATE INDEX IF NOT EXISTS conversations_by_channel"
    " ON conversations (platform, channel_id, subject, ended)",
    "CREATE INDEX IF NOT EXISTS conversations_by_session ON conversations (session_id)",
    "CREATE TABLE IF NOT EXISTS cursors (session_id TEXT PRIMARY KEY,"
    " last_message_id TEXT NOT NULL, updated_at TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS posts (session_id TEXT NOT NULL, post_key TEXT NOT NULL,"
    " message_id TEXT, created_at TEXT NOT NULL, PRIMARY KEY (session_id, post_key))",
    "CREATE TABLE IF NOT EXISTS turn_origins (session_id TEXT NOT NULL, turn_id TEXT NOT NULL,"
    " message_id TEXT, user_id TEXT, PRIMARY KEY (session_id, turn_id))",
    "CREATE TABLE IF NOT EXISTS start_defaults (subject TEXT PRIMARY KEY, node_id TEXT NOT NULL,"
    " agent_name TEXT NOT NULL, updated_at TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS queued_prompts (session_id TEXT NOT NULL, prompt_id TEXT NOT"
    " NULL, message_id TEXT, user_id TEXT, PRIMARY KEY (session_id, prompt_id))",
    "CREATE TABLE IF NOT EXISTS channel_settings (platform TEXT NOT NULL, channel_id TEXT NOT"
    " NULL, busy_mode TEXT, updated_at TEXT NOT NULL, PRIMARY KEY (platform, channel_id))",
]


async def _v1_tables(conn: AsyncConnection) -> None:
    for statement in _V1:
        await conn.exec_driver_sql(statement)


async def _v2_order_and_booleans(conn: AsyncConnection) -> None:
    """Rebuild `conversations` and `queued_prompts` with `seq`, numbered in the old insertion
    order (`rowid` on SQLite; PostgreSQL had no such order: creation time), `ended` boolean."""
    sqlite = conn.dialect.name == "sqlite"
    order = "rowid" if sqlite else "created_at"
    for name in ("conversations", "queued_prompts"):
        await conn.exec_driver_sql(f"ALTER TABLE {name} RENAME TO {name}_v1")
    for index in ("conversations_by_channel", "conversations_by_session"):
        await conn.exec_driver_sql(f"DROP INDEX IF EXISTS {index}")
    await conn.run_sync(
        metadata.create_all, tables=[conversations, queued_prompts], checkfirst=False
    )
    columns = "conversation_key, platform, channel_id, thread_id, subject, session_id, node_id,"
    columns += " agent_name, created_at"
    await conn.exec_driver_sql(
        f"INSERT INTO conversations ({columns}, ended, seq) SELECT {columns}, ended <> 0,"
        f" row_number() OVER (ORDER BY {order}) FROM conversations_v1"
    )
    order = "rowid" if sqlite else "session_id, prompt_id"
    await conn.exec_driver_sql(
        "INSERT INTO queued_prompts (seq, session_id, prompt_id, message_id, user_id)"
        f" SELECT row_number() OVER (ORDER BY {order}), session_id, prompt_id, message_id,"
        " user_id FROM queued_prompts_v1"
    )
    for name in ("conversations", "queued_prompts"):
        await conn.exec_driver_sql(f"DROP TABLE {name}_v1")
        if not sqlite:  # the sequences go on after the numbers just given
            await conn.exec_driver_sql(
                f"SELECT setval('{name}_seq', COALESCE((SELECT MAX(seq) FROM {name}), 0) + 1,"
                " false)"
            )


async def _v3_web_edge(conn: AsyncConnection) -> None:
    await conn.run_sync(metadata.create_all, tables=[web_logins, web_usage_days], checkfirst=True)


async def _v4_web_prompts(conn: AsyncConnection) -> None:
    await conn.run_sync(metadata.create_all, tables=[web_prompts], checkfirst=True)


async def _v5_session_modes(conn: AsyncConnection) -> None:
    await conn.run_sync(metadata.create_all, tables=[session_modes], checkfirst=True)


async def _v6_schedule_origins(conn: AsyncConnection) -> None:
    await conn.run_sync(metadata.create_all, tables=[schedule_origins], checkfirst=True)


async def _v7_session_models(conn: AsyncConnection) -> None:
    await conn.run_sync(metadata.create_all, tables=[session_models], checkfirst=True)


# (number, name, step). Append only (rule 5).
MIGRATIONS: list[tuple[int, str, Step]] = [
    (
        1,
        "initial: conversations, cursors, posts, turn origins, defaults, queue, channels",
        _v1_tables,
    ),
    (
        2,
        "explicit insertion order (seq) and a boolean ended, for PostgreSQL (issue 19)",
        _v2_order_and_booleans,
    ),
    (3, "the web edge: one-time login links and usage per day (issue 21)", _v3_web_edge),
    (4, "the web edge's own prompts, for a reloaded page (issue 28)", _v4_web_prompts),
    (5, "the agent mode chosen from chat, per session (issue 30)", _v5_session_modes),
    (
        6,
        "where a schedule was made from chat, and its runs posted (issue 30)",
        _v6_schedule_origins,
    ),
    (7, "the agent models offered and chosen, per session (issue 30)", _v7_session_models),
]


# Rule 4's advisory lock key: "rawpgw" (the gateway's since issue 19: kept).
LOCK_KEY = 0x7261_7770_6777

SCHEMA = migrate_runner.Schema(
    metadata=metadata,
    versions=schema_version,
    markers=(schema_version.name, conversations.name),  # rule 2: a raw-SQLite store has no version
    migrations=MIGRATIONS,
    lock_key=LOCK_KEY,
    stamp=lambda moment: moment.isoformat(),
    log=log,
    created="created the conversation store at version %d",
    applied="applied conversation store migration %d: %s",
)


head = SCHEMA.head
migrate = SCHEMA.migrate  # (db, migrations=None) → the numbers applied now
