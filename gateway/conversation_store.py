"""Which chat conversation talks to which RAWP session, kept in SQLite (issue 10).

One row per conversation (a Discord thread, a Slack thread, the console): the session it is
bound to, whose session it is (the master subject), the node and agent. The row survives a
gateway restart, so a message in an old thread reaches its session again; ending a session
marks the row ended rather than deleting it, so the thread can say so.

The file is created with mode 0600 (it names users and sessions, not secrets, but nobody else
needs to read it) and opened in WAL mode; every write is committed at once.

It also keeps what a gateway killed mid-turn needs to go on without posting twice or leaving a
gap (issue 14 §4; gateway.live and gateway.posting use it):

- `cursors`: per session, the last frame whose rendering is complete — the `last_message_id`
  the link reconnects with after a restart, so the master replays what follows;
- `posts`: per session, every message the renderer posted, under a deterministic key, with
  the platform's message id once it is known. A key without a message id is an intent: the
  post may or may not have reached the platform (the process died in between), so the
  platform is asked before posting again (gateway.posting);
- `turn_origins`: which chat message (and user) started each turn, so the gateway after a
  restart still marks that message ✅ at the turn's end and knows who may answer approvals;
- `queued_prompts`: the prompts marked 🕒 while a turn ran (gateway.busy), in the order sent,
  so a restarted gateway still takes the 🕒 off, puts ⏳ on when their turns start and counts
  down the queue line (its message is a post under the key `busy.LINE_KEY`).

Older files get these tables on open (`CREATE TABLE IF NOT EXISTS`): nothing to migrate. All four
are dropped for a session when its conversation is marked ended.

`start_defaults` keeps, per master subject, the machine and agent of the user's last successful
start: a mention or a direct message that names no machine starts there (gateway.starting).

`channel_settings` holds what a channel chose for every session thread under it (issue 16 §5:
`busy_mode`, gateway.busy); a row outlives the sessions, and an older file gets the table on
open like the others.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import aiosqlite

from gateway.platform import ConversationRef
from rawp.clock import SYSTEM_CLOCK, Clock, iso

SCHEMA = """
CREATE TABLE IF NOT EXISTS conversations (
    conversation_key TEXT PRIMARY KEY,
    platform TEXT NOT NULL,
    channel_id TEXT NOT NULL,
    thread_id TEXT,
    subject TEXT NOT NULL,
    session_id TEXT NOT NULL,
    node_id TEXT NOT NULL,
    agent_name TEXT NOT NULL,
    created_at TEXT NOT NULL,
    ended INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS conversations_by_channel
    ON conversations (platform, channel_id, subject, ended);
CREATE INDEX IF NOT EXISTS conversations_by_session ON conversations (session_id);
CREATE TABLE IF NOT EXISTS cursors (
    session_id TEXT PRIMARY KEY,
    last_message_id TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS posts (
    session_id TEXT NOT NULL,
    post_key TEXT NOT NULL,
    message_id TEXT,
    created_at TEXT NOT NULL,
    PRIMARY KEY (session_id, post_key)
);
CREATE TABLE IF NOT EXISTS turn_origins (
    session_id TEXT NOT NULL,
    turn_id TEXT NOT NULL,
    message_id TEXT,
    user_id TEXT,
    PRIMARY KEY (session_id, turn_id)
);
CREATE TABLE IF NOT EXISTS start_defaults (
    subject TEXT PRIMARY KEY,
    node_id TEXT NOT NULL,
    agent_name TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS queued_prompts (
    session_id TEXT NOT NULL,
    prompt_id TEXT NOT NULL,
    message_id TEXT,
    user_id TEXT,
    PRIMARY KEY (session_id, prompt_id)
);
CREATE TABLE IF NOT EXISTS channel_settings (
    platform TEXT NOT NULL,
    channel_id TEXT NOT NULL,
    busy_mode TEXT,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (platform, channel_id)
);
"""

INTENT = ""  # recorded(): the post was begun, its message id is not known


def conversation_key(conversation: ConversationRef) -> str:
    parts = (conversation.platform, conversation.channel_id, conversation.thread_id or "")
    return "\x1f".join(parts)


@dataclass(frozen=True)
class Binding:
    conversation: ConversationRef
    subject: str
    session_id: str
    node_id: str
    agent_name: str
    created_at: str
    ended: bool = False


class ConversationStore:
    def __init__(self, db: aiosqlite.Connection, clock: Clock = SYSTEM_CLOCK) -> None:
        self._db = db
        self._clock = clock

    @classmethod
    async def open(cls, path: Path | str, clock: Clock = SYSTEM_CLOCK) -> ConversationStore:
        if str(path) != ":memory:":
            path = Path(path)
            path.parent.mkdir(parents=True, exist_ok=True)
            if not path.exists():
                os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
        db = await aiosqlite.connect(str(path))
        db.row_factory = aiosqlite.Row
        await db.execute("PRAGMA journal_mode=WAL")
        await db.executescript(SCHEMA)
        await db.commit()
        return cls(db, clock)

    async def close(self) -> None:
        await self._db.close()

    async def bind(
        self,
        conversation: ConversationRef,
        *,
        subject: str,
        session_id: str,
        node_id: str,
        agent_name: str,
    ) -> Binding:
        """Bind a conversation to a new session (a thread used again gets the new one)."""
        created = iso(self._clock.now())
        await self._db.execute(
            "INSERT OR REPLACE INTO conversations VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0)",
            (
                conversation_key(conversation),
                conversation.platform,
                conversation.channel_id,
                conversation.thread_id,
                subject,
                session_id,
                node_id,
                agent_name,
                created,
            ),
        )
        await self._db.commit()
        return Binding(conversation, subject, session_id, node_id, agent_name, created)

    async def get(self, conversation: ConversationRef) -> Binding | None:
        async with self._db.execute(
            "SELECT * FROM conversations WHERE conversation_key = ?",
            (conversation_key(conversation),),
        ) as cursor:
            row = await cursor.fetchone()
        return _binding(row) if row else None

    async def latest_in_channel(
        self, conversation: ConversationRef, subject: str
    ) -> Binding | None:
        """The subject's newest open session under this channel (its threads included): a
        slash command typed in the channel rather than the thread still finds it."""
        async with self._db.execute(
            "SELECT * FROM conversations WHERE platform = ? AND channel_id = ? AND subject = ?"
            " AND ended = 0 ORDER BY created_at DESC, rowid DESC LIMIT 1",
            (conversation.platform, conversation.channel_id, subject),
        ) as cursor:
            row = await cursor.fetchone()
        return _binding(row) if row else None

    async def open_bindings(self) -> list[Binding]:
        async with self._db.execute("SELECT * FROM conversations WHERE ended = 0") as cursor:
            rows = await cursor.fetchall()
        return [_binding(row) for row in rows]

    async def mark_ended(self, session_id: str) -> None:
        await self._db.execute(
            "UPDATE conversations SET ended = 1 WHERE session_id = ?", (session_id,)
        )
        await self._db.execute("DELETE FROM cursors WHERE session_id = ?", (session_id,))
        await self._db.execute("DELETE FROM posts WHERE session_id = ?", (session_id,))
        await self._db.execute("DELETE FROM turn_origins WHERE session_id = ?", (session_id,))
        await self._db.execute("DELETE FROM queued_prompts WHERE session_id = ?", (session_id,))
        await self._db.commit()

    # --- per-channel settings (issue 16 §5) ---------------------------------------------------

    async def busy_mode(self, platform: str, channel_id: str) -> str | None:
        """The channel's busy mode (gateway.busy); None when never set."""
        async with self._db.execute(
            "SELECT busy_mode FROM channel_settings WHERE platform = ? AND channel_id = ?",
            (platform, channel_id),
        ) as cursor:
            row = await cursor.fetchone()
        return row["busy_mode"] if row else None

    async def set_busy_mode(self, platform: str, channel_id: str, mode: str) -> None:
        await self._db.execute(
            "INSERT INTO channel_settings (platform, channel_id, busy_mode, updated_at)"
            " VALUES (?, ?, ?, ?) ON CONFLICT (platform, channel_id) DO UPDATE"
            " SET busy_mode = excluded.busy_mode, updated_at = excluded.updated_at",
            (platform, channel_id, mode, iso(self._clock.now())),
        )
        await self._db.commit()

    # --- prompts waiting behind a turn (issue 16 §5) -----------------------------------------

    async def record_queued(
        self, session_id: str, prompt_id: str, message_id: str | None, user_id: str | None
    ) -> None:
        await self._db.execute(
            "INSERT OR REPLACE INTO queued_prompts VALUES (?, ?, ?, ?)",
            (session_id, prompt_id, message_id, user_id),
        )
        await self._db.commit()

    async def forget_queued(self, session_id: str, prompt_ids: list[str]) -> None:
        await self._db.executemany(
            "DELETE FROM queued_prompts WHERE session_id = ? AND prompt_id = ?",
            [(session_id, prompt_id) for prompt_id in prompt_ids],
        )
        await self._db.commit()

    async def queued(self, session_id: str) -> list[tuple[str, str | None, str | None]]:
        """(prompt id, chat message id, user id) of the session's queued prompts, in order."""
        async with self._db.execute(
            "SELECT prompt_id, message_id, user_id FROM queued_prompts WHERE session_id = ?"
            " ORDER BY rowid",
            (session_id,),
        ) as cursor:
            rows = await cursor.fetchall()
        return [(row["prompt_id"], row["message_id"], row["user_id"]) for row in rows]

    async def forget_post(self, session_id: str, key: str) -> None:
        await self._db.execute(
            "DELETE FROM posts WHERE session_id = ? AND post_key = ?", (session_id, key)
        )
        await self._db.commit()

    async def remember_start(self, subject: str, node_id: str, agent_name: str) -> None:
        """The user's default for the next start without a named machine (issue 16 §1)."""
        await self._db.execute(
            "INSERT INTO start_defaults VALUES (?, ?, ?, ?) ON CONFLICT (subject) DO UPDATE"
            " SET node_id = excluded.node_id, agent_name = excluded.agent_name,"
            " updated_at = excluded.updated_at",
            (subject, node_id, agent_name, iso(self._clock.now())),
        )
        await self._db.commit()

    async def last_start(self, subject: str) -> tuple[str, str] | None:
        """(node id, agent) of the subject's last successful start, if any."""
        async with self._db.execute(
            "SELECT node_id, agent_name FROM start_defaults WHERE subject = ?", (subject,)
        ) as cursor:
            row = await cursor.fetchone()
        return (row["node_id"], row["agent_name"]) if row else None

    # --- the cursor and the posts of a session (issue 14 §4) ---------------------------------

    async def cursor(self, session_id: str) -> str | None:
        """The last frame of the session whose rendering is complete, if one was recorded."""
        async with self._db.execute(
            "SELECT last_message_id FROM cursors WHERE session_id = ?", (session_id,)
        ) as cursor:
            row = await cursor.fetchone()
        return row["last_message_id"] if row else None

    async def save_cursor(self, session_id: str, message_id: str) -> None:
        await self._db.execute(
            "INSERT INTO cursors VALUES (?, ?, ?) ON CONFLICT (session_id) DO UPDATE"
            " SET last_message_id = excluded.last_message_id, updated_at = excluded.updated_at",
            (session_id, message_id, iso(self._clock.now())),
        )
        await self._db.commit()

    async def recorded(self, session_id: str, key: str) -> str | None:
        """The platform message id posted under `key`; `INTENT` when the post was begun and
        its result never recorded; None when nothing was posted under it."""
        async with self._db.execute(
            "SELECT message_id FROM posts WHERE session_id = ? AND post_key = ?",
            (session_id, key),
        ) as cursor:
            row = await cursor.fetchone()
        if row is None:
            return None
        return row["message_id"] or INTENT

    async def record_turn_origin(
        self, session_id: str, turn_id: str, message_id: str | None, user_id: str | None
    ) -> None:
        await self._db.execute(
            "INSERT OR REPLACE INTO turn_origins VALUES (?, ?, ?, ?)",
            (session_id, turn_id, message_id, user_id),
        )
        await self._db.commit()

    async def turn_origin(self, session_id: str, turn_id: str) -> tuple[str | None, str | None]:
        """(chat message id, user id) that started the turn; (None, None) when not recorded."""
        async with self._db.execute(
            "SELECT message_id, user_id FROM turn_origins WHERE session_id = ? AND turn_id = ?",
            (session_id, turn_id),
        ) as cursor:
            row = await cursor.fetchone()
        return (row["message_id"], row["user_id"]) if row else (None, None)

    async def record_intent(self, session_id: str, key: str) -> None:
        await self._db.execute(
            "INSERT OR IGNORE INTO posts VALUES (?, ?, NULL, ?)",
            (session_id, key, iso(self._clock.now())),
        )
        await self._db.commit()

    async def record_post(self, session_id: str, key: str, message_id: str) -> None:
        await self._db.execute(
            "INSERT INTO posts VALUES (?, ?, ?, ?) ON CONFLICT (session_id, post_key)"
            " DO UPDATE SET message_id = excluded.message_id",
            (session_id, key, message_id, iso(self._clock.now())),
        )
        await self._db.commit()


def _binding(row: aiosqlite.Row) -> Binding:
    return Binding(
        conversation=ConversationRef(row["platform"], row["channel_id"], row["thread_id"]),
        subject=row["subject"],
        session_id=row["session_id"],
        node_id=row["node_id"],
        agent_name=row["agent_name"],
        created_at=row["created_at"],
        ended=bool(row["ended"]),
    )
