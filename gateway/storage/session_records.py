"""What a gateway killed mid-turn needs to go on without posting twice (issue 14 §4).

Kept in the conversation store's database (gateway.storage.conversation_store, whose class
inherits these records) and used by gateway.sessions.live and gateway.rendering.posting:

- `cursors`: per session, the last frame whose rendering is complete — the `last_message_id`
  the link reconnects with after a restart, so the master replays what follows;
- `posts`: per session, every message the renderer posted, under a deterministic key, with
  the platform's message id once it is known. A key without a message id is an intent
  (`INTENT`): the post may or may not have reached the platform (the process died in
  between), so the platform is asked before posting again (gateway.rendering.posting);
- `turn_origins`: which chat message (and user) started each turn, so the gateway after a
  restart still marks that message ✅ at the turn's end and knows who may answer approvals;
- `session_modes`: the agent mode the owner chose from chat (issue 30 §1), by its chat name,
  so a restarted gateway shows it and sends it again when it revives the session;
- `session_models`: the models the agent offers, the one it is on and the one chosen from chat
  (issue 30 §1), for `/rawp model` on any replica and for a revived session.

Each is dropped for a session when its conversation is marked ended.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from sqlalchemy import delete, select

from gateway.storage.store_schema import (
    cursors,
    posts,
    session_models,
    session_modes,
    turn_origins,
)
from gateway.storage.store_tables import StoreTables
from rawp.clock import iso

INTENT = ""  # recorded(): the post was begun, its message id is not known


@dataclass(frozen=True)
class ModelRecord:
    """`session_models`: what the session's agent offers and is on, and what chat chose."""

    offered: list[str]
    current: str | None
    chosen: str | None


class SessionRecords(StoreTables):
    async def cursor(self, session_id: str) -> str | None:
        """The last frame of the session whose rendering is complete, if one was recorded."""
        c = cursors.c
        row = await self._one(select(c.last_message_id).where(c.session_id == session_id))
        return row["last_message_id"] if row else None

    async def save_cursor(self, session_id: str, message_id: str) -> None:
        row = {"session_id": session_id, "last_message_id": message_id}
        row["updated_at"] = iso(self._clock.now())
        await self._upsert(cursors, row, ["session_id"], replace=["last_message_id", "updated_at"])

    async def recorded(self, session_id: str, key: str) -> str | None:
        """The platform message id posted under `key`; `INTENT` when the post was begun and
        its result never recorded; None when nothing was posted under it."""
        c = posts.c
        row = await self._one(
            select(c.message_id).where(c.session_id == session_id, c.post_key == key)
        )
        if row is None:
            return None
        return row["message_id"] or INTENT

    async def record_turn_origin(
        self, session_id: str, turn_id: str, message_id: str | None, user_id: str | None
    ) -> None:
        row = {"session_id": session_id, "turn_id": turn_id}
        row |= {"message_id": message_id, "user_id": user_id}
        await self._upsert(
            turn_origins, row, ["session_id", "turn_id"], replace=["message_id", "user_id"]
        )

    async def turn_origin(self, session_id: str, turn_id: str) -> tuple[str | None, str | None]:
        """(chat message id, user id) that started the turn; (None, None) when not recorded."""
        c = turn_origins.c
        row = await self._one(
            select(c.message_id, c.user_id).where(c.session_id == session_id, c.turn_id == turn_id)
        )
        return (row["message_id"], row["user_id"]) if row else (None, None)

    async def record_intent(self, session_id: str, key: str) -> None:
        """The post under `key` is about to be made: recorded only if nothing is (a message id
        already recorded, by this replica or another, is kept)."""
        row = {"session_id": session_id, "post_key": key, "message_id": None}
        row["created_at"] = iso(self._clock.now())
        await self._upsert(posts, row, ["session_id", "post_key"], replace=[])

    async def record_post(self, session_id: str, key: str, message_id: str) -> None:
        row = {"session_id": session_id, "post_key": key, "message_id": message_id}
        row["created_at"] = iso(self._clock.now())
        await self._upsert(posts, row, ["session_id", "post_key"], replace=["message_id"])

    async def forget_post(self, session_id: str, key: str) -> None:
        async with self._db.write() as conn:
            await conn.execute(
                delete(posts).where(posts.c.session_id == session_id, posts.c.post_key == key)
            )

    async def session_mode(self, session_id: str) -> str | None:
        """The mode chosen from chat for the session (its chat name); None: never chosen."""
        c = session_modes.c
        row = await self._one(select(c.mode).where(c.session_id == session_id))
        return row["mode"] if row else None

    async def set_session_mode(self, session_id: str, mode: str) -> None:
        row = {"session_id": session_id, "mode": mode, "updated_at": iso(self._clock.now())}
        await self._upsert(session_modes, row, ["session_id"], replace=["mode", "updated_at"])

    async def session_model(self, session_id: str) -> ModelRecord | None:
        """The session's models as the thread last learned them; None: none offered."""
        c = session_models.c
        query = select(c.offered, c.current, c.chosen).where(c.session_id == session_id)
        row = await self._one(query)
        if row is None:
            return None
        return ModelRecord(json.loads(row["offered"]), row["current"], row["chosen"])

    async def note_models(self, session_id: str, offered: list[str], current: str | None) -> None:
        """What the agent offers and is on, as its capabilities said (the chosen one stays)."""
        row = {"session_id": session_id, "offered": json.dumps(offered), "current": current}
        row["updated_at"] = iso(self._clock.now())
        replace = ["offered", "current", "updated_at"]
        await self._upsert(session_models, row, ["session_id"], replace=replace)

    async def choose_model(self, session_id: str, chosen: str) -> None:
        """The model the thread showed a line for: sent again to a revived session."""
        row = {"session_id": session_id, "offered": "[]", "current": chosen, "chosen": chosen}
        row["updated_at"] = iso(self._clock.now())
        await self._upsert(session_models, row, ["session_id"], replace=["chosen", "updated_at"])
