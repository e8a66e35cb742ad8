"""Usage aggregation (RAWP §9.4.2 E-WS-07, §9.2.2; decisions A-19, A-24).

Every `session.usage` the relay sees is recorded here *and* forwarded to the edges (A-24).
Metrics are sums over calendar periods in UTC: `today` since 00:00, `week` since Monday 00:00,
`month` since the 1st 00:00. Without `period` the answer is for `today` (A-19).
`estimated_cost` sums `cost_usd`; usage without a cost counts as 0.

Records are written in rounds by one writer (master.edge.usage.bookkeeping, issue 35): a frame
waits for the round that holds it, so it is recorded before it is forwarded. A usage frame is
never dropped silently (issue 29 §4): a round the database refuses is tried again (safe, as a
record is kept once by `message_id`), and a record that fails every try is logged as an error
naming the frame and counted in `rawp_master_usage_unrecorded_total`, for an alert. The frame
still reaches the edges.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import ValidationError

from master.edge.usage.bookkeeping import Bookkeeper
from master.metrics import MasterMetrics
from master.storage import usage as store
from master.storage.db import Database
from rawp.clock import Clock
from rawp.errors import BadRequest
from rawp.events import Usage

log = logging.getLogger("rawp.master.edge.usage")

PERIODS = ("today", "week", "month")
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
    def __init__(
        self,
        db: Database,
        clock: Clock,
        metrics: MasterMetrics | None = None,
        book: Bookkeeper | None = None,
    ) -> None:
        self._db = db
        self._clock = clock
        self._metrics = metrics
        # The writer of every usage record (its rounds, retries and the count of the lost).
        self.book = book or Bookkeeper(db, clock, metrics)

    async def record_or_count(
        self, *, message_id: str, session_id: str, node_id: str, user_id: str, payload: Any
    ) -> bool:
        """Store one usage frame's payload once its round has committed; False if unreadable,
        already recorded, or refused every try (then logged with its cause and counted by the
        writer, master.edge.usage.bookkeeping rule 3), never dropped silently."""
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
        recorded = await self.book.usage(row)
        if recorded and self._metrics is not None:
            self._metrics.usage(usage)
        return bool(recorded)

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
