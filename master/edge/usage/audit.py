"""The approval audit behind the Edge API (issue 15 §4): the gateway reports, people read.

Rules:

1. `POST /v1/edge/sessions/{id}/audit` (user token): the session must be the caller's, in any
   state (an expiry can be reported after the session ended); another user's session is 404,
   as every foreign id is (X-ERR-05). The record is stored with the master's time, the
   session's node and the caller as owner; `actor` is whoever pressed (a platform subject).
2. What is stored is bounded: identifiers and labels to their column sizes (400 beyond), the
   input preview and detail cut to `PREVIEW_CHARS` here too, whatever the gateway sent — only
   a tool's name and a short preview are ever kept (the gateway redacts before it sends).
3. A `record_id` the gateway chooses makes a retry one row (201 both times, same record).
4. `GET /v1/edge/audit` lists the caller's own records only, newest first; `node_id` narrows to
   one of the caller's nodes (404 for any other), `since` (ISO 8601) and `limit` (1–1000,
   default 100) bound the answer.
"""

from __future__ import annotations

import uuid
from datetime import UTC
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from master.edge.access.auth import EdgeUser
from master.storage import audit as store
from master.storage import edge_sessions
from master.storage.db import Database
from rawp.clock import Clock, iso, parse_iso
from rawp.errors import BadRequest, NotFound
from runtime.http import validate

PREVIEW_CHARS = 200
DEFAULT_LIMIT = 100
MAX_LIMIT = 1000


def cut(text: str | None, size: int = PREVIEW_CHARS) -> str | None:
    """At most `size` characters, an ellipsis marking a cut (rule 2)."""
    if text is None or len(text) <= size:
        return text
    return text[: size - 1] + "…"


class AuditReport(BaseModel):
    """The gateway's report of one approval outcome; unknown keys ignored (§1.3)."""

    model_config = ConfigDict(extra="ignore", strict=True)

    record_id: str | None = Field(default=None, min_length=1, max_length=36)
    outcome: Literal["answered", "refused", "expired"]
    actor: str | None = Field(default=None, min_length=1, max_length=200)
    platform: str = Field(min_length=1, max_length=30)
    interaction_id: str = Field(min_length=1, max_length=200)
    option_id: str | None = Field(default=None, max_length=200)
    option_label: str | None = Field(default=None, max_length=200)
    tool_name: str | None = Field(default=None, max_length=200)
    input_preview: str | None = None
    detail: str | None = None

    @field_validator("input_preview", "detail")
    @classmethod
    def _short(cls, value: str | None) -> str | None:
        return cut(value)

    @model_validator(mode="after")
    def _someone_pressed(self) -> AuditReport:
        if self.outcome != store.EXPIRED and self.actor is None:
            raise ValueError("an answer or a refusal names its actor")
        return self


def describe(row: store.AuditRow) -> dict[str, Any]:
    return {
        "record_id": row.id,
        "session_id": row.session_id,
        "node_id": row.node_id,
        "user_id": row.user_id,
        "recorded_at": iso(row.recorded_at),
        "outcome": row.outcome,
        "actor": row.actor,
        "platform": row.platform,
        "interaction_id": row.interaction_id,
        "option_id": row.option_id,
        "option_label": row.option_label,
        "tool_name": row.tool_name,
        "input_preview": row.input_preview,
        "detail": row.detail,
    }


class AuditLog:
    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    async def record(self, user: EdgeUser, session_id: str, body: dict[str, Any]) -> dict:
        report = validate(AuditReport, body)
        async with self._db.begin() as conn:
            session = await store.session_of(conn, user.id, session_id)
            if session is None:  # rule 1
                raise NotFound(f"no session {session_id} on your account", "SESSION_NOT_FOUND")
            row = store.AuditRow(
                id=report.record_id or str(uuid.uuid4()),
                session_id=session_id,
                node_id=session.node_id,
                user_id=user.id,
                recorded_at=self._clock.now().astimezone(UTC),
                **report.model_dump(exclude={"record_id"}),
            )
            if not await store.record(conn, row):  # rule 3: a retry
                stored = await store.by_id(conn, user.id, row.id)
                if stored is None:  # the id is taken by another user's record
                    raise BadRequest("record_id is already in use", "RECORD_ID_IN_USE")
                row = stored
        return describe(row)

    async def list(
        self, user: EdgeUser, node_id: str | None, since: str | None, limit: str | None
    ) -> dict[str, Any]:
        after = _since(since)
        count = _limit(limit)
        async with self._db.connect() as conn:
            mine = node_id is None or await edge_sessions.user_node(
                conn, user.id, node_id, active=False
            )
            if not mine:
                raise NotFound(f"no node {node_id} on your account", "NODE_NOT_FOUND")
            rows = await store.listing(
                conn, user_id=user.id, node_id=node_id, since=after, limit=count
            )
        return {"records": [describe(row) for row in rows]}


def _since(value: str | None):
    if value is None:
        return None
    try:
        return parse_iso(value)
    except ValueError:
        raise BadRequest("since must be an ISO 8601 time", "INVALID_SINCE") from None


def _limit(value: str | None) -> int:
    if value is None:
        return DEFAULT_LIMIT
    if not value.isdigit() or not 1 <= int(value) <= MAX_LIMIT:
        raise BadRequest(f"limit must be a whole number from 1 to {MAX_LIMIT}", "INVALID_LIMIT")
    return int(value)
