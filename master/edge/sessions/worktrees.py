"""A session's git worktree through the Edge API (issue 30 §3, docs/worktrees.md).

Rules:

1. `POST /v1/edge/sessions/{id}/worktree` with `{"action": "diff"|"merge"|"discard"}` is the
   session owner's only: another user's (or an unknown) id is `404 SESSION_NOT_FOUND`. An
   ended session is still the owner's, since its worktree outlives it.
2. `merge` and `discard` end a session that is still running first, the way DELETE does, so
   the edges hear it ended and no agent writes into a worktree being merged or removed. A
   session that ends meanwhile (another merge, its client restarted without it) is what this
   wants, not a `SESSION_NOT_FOUND`.
3. Then the client's `POST /v1/session/{id}/worktree`; its answer is the edge's, and a refusal
   (400/404/409: no worktree, a merge conflict) reaches the edge with the client's status,
   code and message.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from master.client_calls import ClientCaller, NodeCallError
from master.edge.access.auth import EdgeUser
from master.edge.sessions.sessions import PASSED_ON, EdgeSessions
from master.storage import edge_sessions as store
from master.storage.db import Database
from rawp.errors import BadRequest, NotFound, RawpError
from rawp.session_state import SessionState

log = logging.getLogger("rawp.master.edge.worktrees")

ACTIONS = ("diff", "merge", "discard")


class EdgeWorktrees:
    def __init__(self, db: Database, calls: ClientCaller, sessions: EdgeSessions) -> None:
        self._db = db
        self._calls = calls
        self._sessions = sessions

    async def act(self, user: EdgeUser, session_id: str, body: dict[str, Any]) -> dict[str, Any]:
        action = body.get("action")
        if action not in ACTIONS:
            raise BadRequest(f"action must be one of {', '.join(ACTIONS)}", "INVALID_REQUEST")
        async with self._db.connect() as conn:
            row = await store.user_session(conn, user.id, session_id, ended=True)
        if row is None:  # rule 1
            raise NotFound(f"no session {session_id} on your account", "SESSION_NOT_FOUND")
        if action != "diff" and row.status != SessionState.TERMINATED.value:
            with contextlib.suppress(NotFound):  # it ended since `row` was read (rule 2)
                await self._sessions.terminate(user, session_id)
        reply = await self._calls.call(
            row.node_id, "POST", f"/v1/session/{session_id}/worktree", json={"action": action}
        )
        answer = reply.body if isinstance(reply.body, dict) else {}
        if reply.status == 200:
            log.info("session %s: worktree %s by %s", session_id, action, user.id)
            return answer
        code, message = answer.get("error_code"), answer.get("message")
        if reply.status in PASSED_ON and isinstance(code, str):  # rule 3
            return_message = message if isinstance(message, str) else code
            raise RawpError(return_message, code, status=reply.status)
        raise NodeCallError(f"the node answered the worktree {action} with HTTP {reply.status}")
