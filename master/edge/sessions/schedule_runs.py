"""One run of a scheduled prompt (issue 30 §5): a new session on the schedule's node, then the
prompt, under the rules an edge's prompt is under.

Rules:

1. The session starts the way EP-E4 starts one (`EdgeSessions.create`, as the schedule's
   owner): the node must still be theirs and synced, the agent must accept; a refusal is the
   run's outcome (scheduler rule 4).
2. The prompt goes through the security policy before the session starts, and through the
   budgets once it has (they read the session); a refused prompt ends the session it started.
3. The prompt is a `control.prompt.request` handed to the session's client link, as the data
   plane hands an edge's. The session then stays open: its owner attaches to it from any edge
   (it is listed by EP-E5 and named in the schedule's `last_session_id`).
"""

from __future__ import annotations

import logging
from typing import Any

from master.edge.access.auth import EdgeUser
from master.edge.links.dataplane import DataPlane
from master.edge.sessions.scheduler import RunResult
from master.edge.sessions.sessions import EdgeSessions
from rawp.clock import Clock
from rawp.errors import RawpError
from rawp.events import PromptRequest
from rawp.frames import dump_frame, make_frame

log = logging.getLogger("rawp.master.edge.schedule_runs")


class ScheduledRuns:
    def __init__(self, sessions: EdgeSessions, plane: DataPlane, clock: Clock) -> None:
        self._sessions = sessions
        self._plane = plane
        self._clock = clock

    async def __call__(self, row: Any) -> RunResult:
        owner = EdgeUser(id=row.user_id)
        prompt = PromptRequest(prompt_text=row.prompt)
        verdict = self._plane.policy.check(prompt)
        if not verdict.allowed:  # rule 2
            return RunResult(None, f"missed: the prompt was refused: {verdict.reason}")
        body = {"agent_name": row.agent_name}
        if row.workspace_path:
            body["workspace_path"] = row.workspace_path
        try:
            made = await self._sessions.create(owner, row.node_id, body)
        except RawpError as exc:  # rule 1: node offline, unsynced, agent refused
            return RunResult(None, f"missed: {exc.message}")
        session_id = made["session_id"]
        refusal = await self._over_budget(session_id)
        if refusal is not None:
            await self._sessions.terminate(owner, session_id)
            return RunResult(None, f"missed: {refusal}")
        frame = make_frame(
            "control.prompt.request", prompt, session_id=session_id, clock=self._clock
        )
        if not await self._plane.relay.to_client(session_id, dump_frame(frame)):  # rule 3
            return RunResult(session_id, "started, but the prompt could not be handed over")
        log.info("schedule %s: ran in session %s", row.id, session_id)
        return RunResult(session_id, "ran")

    async def _over_budget(self, session_id: str) -> str | None:
        budgets = self._plane.budgets
        live = self._sessions.live.get(session_id)
        if budgets is None or not budgets.enabled or live is None:
            return None
        spending = await budgets.check(live)
        return spending.refusal.message if spending.refusal is not None else None
