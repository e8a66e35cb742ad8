"""Usage aggregation (RAWP §9.4.2 E-WS-07, §9.2.2; decisions A-19, A-24).

Every `session.usage` the relay sees is recorded here *and* forwarded to the edges (A-24).
Metrics are sums over calendar periods in UTC: `today` since 00:00, `week` since Monday 00:00,
`month` since the 1st 00:00. Without `period` the answer is for `today` (A-19).
`estimated_cost` sums `cost_usd`; usage without a cost counts as 0.

A usage frame is never dropped silently (issue 29 §4): a write the database refuses is tried
again (`record_or_count`: `RECORD_WAITS`, safe as a record is kept once by `message_id`), and
one that fails every try is logged as an error naming the frame and counted in
`rawp_master_usage_unrecorded_total`, for an alert. The frame still reaches the edges.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import ValidationError

from master.metrics import MasterMetrics
from master.storage import usage as store
from master.storage.db import Database
from rawp.clock import Clock
from rawp.errors import BadRequest
from rawp.events import Usage

log = logging.getLogger("rawp.master.edge.usage")

PERIODS = ("today", "week", "month")
RECORD_WAITS = (0.1, 0.5, 1.5)  # seconds before each retry of a refused usage write
DEFAULT_PERIOD = "today"


def period_start(period: str, now: datetime) -> datetime:
    day = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    if period == "today":
        return day
    if period == "week":
        return day - timedelta(days=day.weekday())
    if period == "month":
        return day.replace(day=1)
    raise BadRequest(f"period must be one of {', '.join(PERIODS)}", "INVALID_PERIOD")


class UsageBook:
    def __init__(self, db: Database, clock: Clock, metrics: MasterMetrics | None = None) -> None:
        self._db = db
        self._clock = clock
        self._metrics = metrics

    async def record_or_count(
        self, *, message_id: str, session_id: str, node_id: str, user_id: str, payload: Any
    ) -> bool:
        """`record`, tried again while the database refuses it; a frame that cannot be kept
        is logged with its cause and counted, never dropped silently."""
        for wait in (*RECORD_WAITS, None):
            try:
                return await self.record(
                    message_id=message_id,
                    session_id=session_id,
                    node_id=node_id,
                    user_id=user_id,
                    payload=payload,
                )
            except Exception as exc:
                if wait is None:
                    log.error(
                        "session %s: session.usage %s not recorded after %d tries; the "
                        "budgets and usage figures miss it",
                        session_id, message_id, len(RECORD_WAITS) + 1, exc_info=exc,
                    )  # fmt: skip
                    if self._metrics is not None:
                        self._metrics.usage_unrecorded.inc()
                    return False
                log.warning("session %s: recording usage failed, retrying: %r", session_id, exc)
                await asyncio.sleep(wait)
        return False

    async def record(
        self, *, message_id: str, session_id: str, node_id: str, user_id: str, payload: Any
    ) -> bool:
        """Store one usage frame's payload; False if unreadable or already recorded."""
        try:
            usage = Usage.model_validate(payload)
        except ValidationError:
            log.warning("session %s sent a session.usage that breaks its schema", session_id)
            return False
        row = store.UsageRow(
            message_id=message_id,
            session_id=session_id,
            node_id=node_id,
            user_id=user_id,
            recorded_at=self._clock.now().astimezone(UTC),
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            tool_invocations=usage.tool_invocations or 0,
            cost_usd=usage.cost_usd or 0.0,
        )
        async with self._db.begin() as conn:
            recorded = await store.record(conn, row)
        if recorded and self._metrics is not None:
            self._metrics.usage(usage)
        return recorded

    async def aggregate(self, node_id: str, period: str) -> dict[str, Any]:
        since = period_start(period, self._clock.now())
        async with self._db.connect() as conn:
            total = await store.total(conn, node_id, since)
        return usage_body(total)


def usage_body(total: store.UsageSum) -> dict[str, Any]:
    """A sum as the Edge API shows it (§9.2.2 `aggregated_usage`)."""
    return {
        "total_input_tokens": total.input_tokens,
        "total_output_tokens": total.output_tokens,
        "estimated_cost": round(total.cost_usd, 10),
        "total_tool_invocations": total.tool_invocations,
    }
