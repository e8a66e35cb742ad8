"""Scheduled prompts through the Edge API (issue 30 §5, docs/schedules.md, docs/edge-api.md).

Rules:

1. `POST /v1/edge/schedules` with `node_id`, `agent_name`, `prompt`, `schedule` (cron or a
   phrase, schedule_spec rule 1), optional `workspace_path` and `timezone` (UTC): the node must
   be the caller's (`404 NODE_NOT_FOUND`). The answer, `201`, is the schedule as listed.
2. A schedule is its owner's only: listing shows the caller's own; pause, resume and delete of
   another user's (or an unknown) id is `404 SCHEDULE_NOT_FOUND` and changes nothing.
3. Pausing stops the runs; resuming starts from now (ticks that fell while paused are neither
   run nor missed, storage.schedules.set_paused).
"""

from __future__ import annotations

import logging
from typing import Any

from master.edge.access.auth import EdgeUser
from master.edge.sessions.nodes import NodeDirectory
from master.edge.sessions.schedule_spec import next_tick, to_cron, zone
from master.storage import schedules as store
from master.storage.db import Database, utc
from rawp.clock import Clock, iso, new_id
from rawp.errors import BadRequest, NotFound

log = logging.getLogger("rawp.master.edge.schedules")

MAX_PROMPT = 8000  # characters: a scheduled prompt is typed in chat, not a document


class EdgeSchedules:
    def __init__(self, db: Database, clock: Clock, nodes: NodeDirectory) -> None:
        self._db = db
        self._clock = clock
        self._nodes = nodes

    async def create(self, user: EdgeUser, body: dict[str, Any]) -> dict[str, Any]:
        prompt = _text(body, "prompt")
        if len(prompt) > MAX_PROMPT:
            raise BadRequest(f"prompt is longer than {MAX_PROMPT} characters", "INVALID_REQUEST")
        cron = to_cron(_text(body, "schedule"))
        timezone = zone(body.get("timezone"))
        agent = _text(body, "agent_name")
        workspace = body.get("workspace_path")
        if workspace is not None and not isinstance(workspace, str):
            raise BadRequest("workspace_path must be a string", "INVALID_REQUEST")
        node = await self._nodes.owned(user, _text(body, "node_id"))  # rule 1
        made = store.NewSchedule(
            id=new_id(),
            user_id=user.id,
            node_id=node.id,
            agent_name=agent,
            workspace_path=workspace or None,
            prompt=prompt,
            cron=cron,
            timezone=timezone,
            created_at=self._clock.now(),
        )
        async with self._db.begin() as conn:
            await store.add(conn, made)
        log.info("schedule %s: %r on node %s for %s", made.id, cron, node.id, user.id)
        return await self._one(user, made.id)

    async def list(self, user: EdgeUser) -> dict[str, Any]:
        async with self._db.connect() as conn:
            rows = await store.user_schedules(conn, user.id)
        return {"schedules": [self._describe(row) for row in rows]}

    async def pause(self, user: EdgeUser, schedule_id: str, paused: bool) -> dict[str, Any]:
        async with self._db.begin() as conn:  # rules 2, 3
            if not await store.set_paused(conn, user.id, schedule_id, paused, self._clock.now()):
                raise _not_found(schedule_id)
        return await self._one(user, schedule_id)

    async def delete(self, user: EdgeUser, schedule_id: str) -> None:
        async with self._db.begin() as conn:
            if not await store.remove(conn, user.id, schedule_id):
                raise _not_found(schedule_id)
        log.info("schedule %s: deleted by %s", schedule_id, user.id)

    async def _one(self, user: EdgeUser, schedule_id: str) -> dict[str, Any]:
        async with self._db.connect() as conn:
            row = await store.user_schedule(conn, user.id, schedule_id)
        if row is None:
            raise _not_found(schedule_id)
        return self._describe(row)

    def _describe(self, row: Any) -> dict[str, Any]:
        last_run = utc(row.last_run_at)
        upcoming = None if row.paused else next_tick(row.cron, row.timezone, last_run)
        return {
            "schedule_id": row.id,
            "node_id": row.node_id,
            "agent_name": row.agent_name,
            "workspace_path": row.workspace_path,
            "prompt": row.prompt,
            "schedule": row.cron,
            "timezone": row.timezone,
            "paused": bool(row.paused),
            "created_at": iso(utc(row.created_at)),
            "next_run_at": iso(max(upcoming, self._clock.now())) if upcoming else None,
            "last_run_at": iso(last_run) if row.last_session_id or row.last_outcome else None,
            "last_session_id": row.last_session_id,
            "last_outcome": row.last_outcome,
            "missed_runs": row.missed_runs,
        }


def _text(body: dict[str, Any], name: str) -> str:
    value = body.get(name)
    if not isinstance(value, str) or not value.strip():
        raise BadRequest(f"{name} is required (a non-empty string)", "INVALID_REQUEST")
    return value.strip()


def _not_found(schedule_id: str) -> NotFound:
    return NotFound(f"no schedule {schedule_id} on your account", "SCHEDULE_NOT_FOUND")
