"""Which chat conversation talks to which RAWP session, in SQLite or PostgreSQL (issues 10, 19).

One row per conversation (a Discord thread, a Slack thread, the console): the session it is
bound to, whose session it is (the master subject), the node and agent. The row survives a
gateway restart, so a message in an old thread reaches its session again; ending a session
marks the row ended rather than deleting it, so the thread can say so.

By default the store is an SQLite file, created with mode 0600 (it names users and sessions, not
secrets, but nobody else needs to read it) and opened in WAL mode. Given an SQLAlchemy URL
(RAWP_GATEWAY_DATABASE_URL) it is a PostgreSQL database that several gateway replicas share
(gateway.storage.store_db; docs/scale-out.md "Gateway replicas"). Either way every method that
writes is one transaction, committed before it returns, and every write is safe against another
replica writing at once: "replace" and "keep the first" are `ON CONFLICT` upserts, never a read then
a write (`record_intent` inserts only if absent, atomically).

It also keeps what a gateway killed mid-turn needs to go on without posting twice or leaving a
gap (issue 14 §4): the `cursors`, `posts` and `turn_origins` records, whose methods this class
inherits from gateway.storage.session_records (the SQL plumbing under both is
gateway.storage.store_tables), and

- `queued_prompts`: the prompts marked 🕒 while a turn ran (gateway.sessions.busy), in the order
  sent, so a restarted gateway still takes the 🕒 off, puts ⏳ on when their turns start and counts
  down the queue line (its message is a post under the key `busy.LINE_KEY`).

The tables and their migrations are in gateway.storage.store_schema; an older file is brought up to
date on open and keeps its rows. All four, and `session_modes` and `session_models`, are dropped
for a session when its conversation is marked ended.

`start_defaults` keeps, per master subject, the machine and agent of the user's last successful
start: a mention or a direct message that names no machine starts there (gateway.sessions.starting).

`channel_settings` holds what a channel chose for every session thread under it (issue 16 §5:
`busy_mode`, gateway.sessions.busy); a row outlives the sessions.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import delete, select, update
from sqlalchemy.exc import SQLAlchemyError

from gateway.platform import ConversationRef
from gateway.storage.session_records import INTENT, SessionRecords
from gateway.storage.store_db import Database, StoreError
from gateway.storage.store_schema import (
    CONVERSATION_SEQ,
    QUEUED_SEQ,
    channel_settings,
    conversations,
    cursors,
    migrate,
    posts,
    queued_prompts,
    session_models,
    session_modes,
    start_defaults,
    turn_origins,
)
from gateway.storage.store_tables import ENGINES
from rawp.clock import SYSTEM_CLOCK, Clock, iso

__all__ = ["INTENT", "Binding", "ConversationStore", "StoreError", "conversation_key"]

# Dropped with the session.
SESSION_TABLES = (cursors, posts, turn_origins, queued_prompts, session_modes, session_models)


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


class ConversationStore(SessionRecords):
    @classmethod
    async def open(cls, target: Path | str, clock: Clock = SYSTEM_CLOCK) -> ConversationStore:
        """`target`: an SQLite file's path, or an SQLAlchemy URL (gateway.storage.store_db rule 1).
        Brings the database's tables up to date (gateway.storage.store_schema). A URL that cannot be
        used, or a database that does not answer, is a `StoreError` naming no URL."""
        try:
            db = Database.open(target)
        except OSError as exc:  # the SQLite file's directory cannot be made
            raise StoreError(f"could not open the conversation database: {_why(exc)}") from None
        if db.dialect not in ENGINES:
            await db.dispose()
            raise StoreError(
                f"the conversation store runs on SQLite or PostgreSQL, not {db.dialect}"
            )
        try:
            await migrate(db)
        except (OSError, SQLAlchemyError, TimeoutError) as exc:
            await db.dispose()
            raise StoreError(f"could not open the conversation database: {_why(exc)}") from None
        return cls(db, clock)

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
        row = {
            "conversation_key": conversation_key(conversation),
            "platform": conversation.platform,
            "channel_id": conversation.channel_id,
            "thread_id": conversation.thread_id,
            "subject": subject,
            "session_id": session_id,
            "node_id": node_id,
            "agent_name": agent_name,
            "created_at": created,
            "ended": False,
            "seq": self._next_seq(conversations, CONVERSATION_SEQ),
        }
        replace = [name for name in row if name not in ("conversation_key", "seq")]
        await self._upsert(conversations, row, ["conversation_key"], replace=replace)
        return Binding(conversation, subject, session_id, node_id, agent_name, created)

    async def get(self, conversation: ConversationRef) -> Binding | None:
        row = await self._one(
            select(conversations).where(
                conversations.c.conversation_key == conversation_key(conversation)
            )
        )
        return _binding(row) if row else None

    async def latest_in_channel(
        self, conversation: ConversationRef, subject: str, *, ended: bool = False
    ) -> Binding | None:
        """The subject's newest open session under this channel (its threads included): a
        slash command typed in the channel rather than the thread still finds it. With
        `ended`, the newest in any state (a worktree outlives its session, issue 30 §3)."""
        c = conversations.c
        where = [
            c.platform == conversation.platform,
            c.channel_id == conversation.channel_id,
            c.subject == subject,
        ]
        if not ended:
            where.append(c.ended.is_(False))
        row = await self._one(
            select(conversations).where(*where).order_by(c.created_at.desc(), c.seq.desc()).limit(1)
        )
        return _binding(row) if row else None

    async def open_bindings(self) -> list[Binding]:
        query = select(conversations).where(conversations.c.ended.is_(False))
        async with self._db.read() as conn:
            rows = (await conn.execute(query.order_by(conversations.c.seq))).mappings().all()
        return [_binding(row) for row in rows]

    async def mark_ended(self, session_id: str) -> None:
        async with self._db.write() as conn:
            await conn.execute(
                update(conversations)
                .where(conversations.c.session_id == session_id)
                .values(ended=True)
            )
            for table in SESSION_TABLES:
                await conn.execute(delete(table).where(table.c.session_id == session_id))

    # --- per-channel settings (issue 16 §5) ---------------------------------------------------

    async def busy_mode(self, platform: str, channel_id: str) -> str | None:
        """The channel's busy mode (gateway.sessions.busy); None when never set."""
        c = channel_settings.c
        row = await self._one(
            select(c.busy_mode).where(c.platform == platform, c.channel_id == channel_id)
        )
        return row["busy_mode"] if row else None

    async def set_busy_mode(self, platform: str, channel_id: str, mode: str) -> None:
        row = {"platform": platform, "channel_id": channel_id, "busy_mode": mode}
        row["updated_at"] = iso(self._clock.now())
        await self._upsert(
            channel_settings, row, ["platform", "channel_id"], replace=["busy_mode", "updated_at"]
        )

    # --- prompts waiting behind a turn (issue 16 §5) -----------------------------------------

    async def record_queued(
        self, session_id: str, prompt_id: str, message_id: str | None, user_id: str | None
    ) -> None:
        """Recorded again, a prompt goes to the end of the queue (as `INSERT OR REPLACE` did)."""
        row = {
            "session_id": session_id,
            "prompt_id": prompt_id,
            "message_id": message_id,
            "user_id": user_id,
            "seq": self._next_seq(queued_prompts, QUEUED_SEQ),
        }
        await self._upsert(
            queued_prompts, row, ["session_id", "prompt_id"], replace=["message_id", "user_id"]
        )

    async def forget_queued(self, session_id: str, prompt_ids: list[str]) -> None:
        c = queued_prompts.c
        async with self._db.write() as conn:
            await conn.execute(
                delete(queued_prompts).where(
                    c.session_id == session_id, c.prompt_id.in_(prompt_ids)
                )
            )

    async def queued(self, session_id: str) -> list[tuple[str, str | None, str | None]]:
        """(prompt id, chat message id, user id) of the session's queued prompts, in order."""
        c = queued_prompts.c
        query = select(c.prompt_id, c.message_id, c.user_id).where(c.session_id == session_id)
        async with self._db.read() as conn:
            rows = (await conn.execute(query.order_by(c.seq))).all()
        return [(row.prompt_id, row.message_id, row.user_id) for row in rows]

    async def remember_start(self, subject: str, node_id: str, agent_name: str) -> None:
        """The user's default for the next start without a named machine (issue 16 §1)."""
        row = {"subject": subject, "node_id": node_id, "agent_name": agent_name}
        row["updated_at"] = iso(self._clock.now())
        await self._upsert(
            start_defaults, row, ["subject"], replace=["node_id", "agent_name", "updated_at"]
        )

    async def last_start(self, subject: str) -> tuple[str, str] | None:
        """(node id, agent) of the subject's last successful start, if any."""
        c = start_defaults.c
        row = await self._one(select(c.node_id, c.agent_name).where(c.subject == subject))
        return (row["node_id"], row["agent_name"]) if row else None


def _binding(row) -> Binding:
    return Binding(
        conversation=ConversationRef(row["platform"], row["channel_id"], row["thread_id"]),
        subject=row["subject"],
        session_id=row["session_id"],
        node_id=row["node_id"],
        agent_name=row["agent_name"],
        created_at=row["created_at"],
        ended=bool(row["ended"]),
    )


def _why(exc: BaseException) -> str:
    """The driver's reason in one line, without SQLAlchemy's statement dump and background
    link (and never the URL: store_db rule 4)."""
    original = getattr(exc, "orig", None) or exc
    reason = str(original).splitlines()[0] if str(original) else type(original).__name__
    return f"{reason} ({type(original).__name__})"
