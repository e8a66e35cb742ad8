"""Which chat conversation talks to which RAWP session, kept in SQLite (issue 10).

One row per conversation (a Discord thread, a Slack thread, the console): the session it is
bound to, whose session it is (the master subject), the node and agent. The row survives a
gateway restart, so a message in an old thread reaches its session again; ending a session
marks the row ended rather than deleting it, so the thread can say so.

The file is created with mode 0600 (it names users and sessions, not secrets, but nobody else
needs to read it) and opened in WAL mode; every write is committed at once.
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
"""


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
