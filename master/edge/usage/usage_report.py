"""`GET /v1/edge/usage` (issue 16 §4; docs/edge-api.md): what the calling user spent.

Rules:

1. Only the caller's own figures: their nodes, their sessions. A `session_id` that is not
   theirs (or unknown) is `404 SESSION_NOT_FOUND`, the same answer either way; an ended
   session of theirs is answered (what it used does not change when it ends).
2. Per node, `today` and `month` are computed exactly as the node metrics endpoint computes
   them (`UsageBook.aggregate`, RAWP §9.2.2, A-19): the two answers agree for the same period.
3. `total` sums the caller's own usage over all their nodes (unregistered ones included);
   `session` is all the session's usage since it started.
4. `budgets` lists every budget that applies (master.edge.usage.budgets), with what is spent.
"""

from __future__ import annotations

from typing import Any

from master.edge.access.auth import EdgeUser
from master.edge.usage.budgets import BudgetGuard, next_reset
from master.edge.usage.usage import UsageBook, period_start, usage_body
from master.storage import edge_sessions as sessions_store
from master.storage import usage as store
from master.storage.db import Database
from rawp.clock import Clock, iso
from rawp.errors import NotFound

PERIODS = {"today": "cost_per_day", "month": "cost_per_month"}  # period → its reset rule


class UsageReports:
    def __init__(self, db: Database, clock: Clock, usage: UsageBook, budgets: BudgetGuard) -> None:
        self._db = db
        self._clock = clock
        self._usage = usage
        self._budgets = budgets

    async def report(self, user: EdgeUser, session_id: str | None) -> dict[str, Any]:
        now = self._clock.now()
        async with self._db.connect() as conn:
            session = None
            if session_id is not None:
                session = await sessions_store.user_session(conn, user.id, session_id, ended=True)
                if session is None:  # rule 1
                    raise NotFound(f"no session {session_id} on your account", "SESSION_NOT_FOUND")
            nodes = await sessions_store.user_nodes(conn, user.id)
            totals = {
                period: usage_body(
                    await store.total_where(conn, period_start(period, now), user_id=user.id)
                )
                for period in PERIODS
            }
            used = None
            if session is not None:
                used = usage_body(await store.total_where(conn, session_id=session.id))
        body: dict[str, Any] = {
            "user_id": user.id,
            "periods": {
                period: {
                    "since": iso(period_start(period, now)),
                    "resets_at": iso(next_reset(rule, now)),  # type: ignore[arg-type]
                }
                for period, rule in PERIODS.items()
            },
            "total": totals,
            "nodes": [
                {
                    "node_id": node.id,
                    "device_name": node.device_name,
                    **{p: await self._usage.aggregate(node.id, p) for p in PERIODS},  # rule 2
                }
                for node in nodes
            ],
            "budgets": await self._budgets.standing(
                user.id, [n.id for n in nodes], session.id if session is not None else None
            ),
        }
        if session is not None:
            body["session"] = {
                "session_id": session.id,
                "node_id": session.node_id,
                "agent_name": session.agent_name,
                "status": session.status,
                "usage": used,
            }
        return body
