"""The web edge's own prompts, kept so that a reloaded page shows each question above its
answer (issue 28 §1; docs/web.md, "Reloading the page").

The master's replay holds what the agent sent, not the prompts that started its turns: a
`control.prompt.request` goes from the edge to the client and is no frame the client sends
back. The page learns where each prompt goes from `session.turn.start`'s `prompt_message_id`,
and its text from here.

Rules:

1. What is kept is what the reader typed, read off the `control.prompt.request` the relay
   forwards (adapters.web.proxy rule 7): `prompt_text` with its escapes undone and each file
   token as `@display_path` (rawp.fileref), at most `TEXT_MAX` characters. A frame that is not
   a prompt, not for this session, or not well formed is passed over: the master judges
   frames, this only remembers.
2. Rows live in the gateway's database (table `web_prompts`, migration 4), so that every
   replica sharing it can answer a page that reconnects to another one (docs/scale-out.md).
   A prompt is kept once per (session, `message_id`): a frame sent again after a reconnect is
   not a second prompt.
3. Bounded: the newest `KEPT` prompts per session and subject; anything older than `MAX_AGE_S`
   goes, whoever's it is; ending a session in the web edge forgets its prompts.
4. A reader sees their own prompts only: every read is by (session, subject).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import delete, select

from gateway.storage.store_db import Database
from gateway.storage.store_schema import web_prompts
from gateway.storage.web_logins import ENGINES
from rawp.fileref import FileToken, parse

KEPT = 200  # rule 3: prompts per session and subject
MAX_AGE_S = 30 * 24 * 3600.0  # rule 3: thirty days
TEXT_MAX = 20_000  # rule 1: characters kept of one prompt
PROMPT_TYPE = b'"control.prompt.request"'


@dataclass(frozen=True)
class WebPrompt:
    message_id: str
    text: str
    sent_at: float


def prompt_of(frame_text: str, session_id: str) -> tuple[str, str] | None:
    """Rule 1: (message_id, the text as typed) of a prompt frame for `session_id`, or None."""
    if PROMPT_TYPE not in frame_text.encode():
        return None  # most frames are not prompts: not parsed at all
    try:
        frame = orjson.loads(frame_text)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(frame, dict) or frame.get("type") != "control.prompt.request":
        return None
    message_id, payload = frame.get("message_id"), frame.get("payload")
    if frame.get("session_id", session_id) != session_id or not isinstance(message_id, str):
        return None
    if not message_id or len(message_id) > 100 or not isinstance(payload, dict):
        return None
    text, refs = payload.get("prompt_text"), payload.get("file_references") or []
    if not isinstance(text, str) or not isinstance(refs, list):
        return None
    return message_id, typed_text(text, refs)[:TEXT_MAX]


def typed_text(prompt_text: str, file_references: list[Any]) -> str:
    """`prompt_text` as the reader typed it: escapes undone, each file token `@path`."""
    parts = parse(prompt_text, file_references)
    return "".join(f"@{p.display_path}" if isinstance(p, FileToken) else p for p in parts)


class WebPrompts:
    def __init__(self, db: Database, *, kept: int = KEPT, now=time.time) -> None:
        self._db = db
        self._kept = kept
        self._now = now
        self._insert = ENGINES[db.dialect]

    async def record(self, subject: str, session_id: str, message_id: str, text: str) -> None:
        """Keep one prompt (rule 2), then trim to the bounds (rule 3), in one transaction."""
        now = self._now()
        c = web_prompts.c
        row = {
            "session_id": session_id,
            "subject": subject,
            "message_id": message_id,
            "text": text,
            "sent_at": now,
        }
        statement = self._insert(web_prompts).values(**row).on_conflict_do_nothing()
        newest = (
            select(c.seq)
            .where(c.session_id == session_id, c.subject == subject)
            .order_by(c.seq.desc())
            .limit(self._kept)
        )
        async with self._db.write() as conn:
            await conn.execute(statement)
            await conn.execute(
                delete(web_prompts).where(
                    c.session_id == session_id, c.subject == subject, c.seq.not_in(newest)
                )
            )
            await conn.execute(delete(web_prompts).where(c.sent_at < now - MAX_AGE_S))

    async def of_session(self, subject: str, session_id: str) -> list[WebPrompt]:
        """Rule 4: this subject's prompts in this session, oldest first."""
        c = web_prompts.c
        query = (
            select(c.message_id, c.text, c.sent_at)
            .where(c.session_id == session_id, c.subject == subject)
            .order_by(c.seq)
        )
        async with self._db.read() as conn:
            rows = (await conn.execute(query)).all()
        return [WebPrompt(r.message_id, r.text, r.sent_at) for r in rows]

    async def forget(self, subject: str, session_id: str) -> None:
        c = web_prompts.c
        async with self._db.write() as conn:
            await conn.execute(
                delete(web_prompts).where(c.session_id == session_id, c.subject == subject)
            )
