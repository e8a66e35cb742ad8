"""`GET /api/usage?days=N`: tokens and cost per UTC day and node for the usage chart (issue 21 §4).

The master answers per period (today, this month: `GET /v1/edge/usage`, docs/edge-api.md), not
per day. Today's figures come from it live; each answer is also recorded (gateway.storage.web_logins
rule 4), and the earlier days of the chart are those records — the last figures this gateway
saw on each day. Days with no record are left out; the chart draws them empty.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from gateway.edge_client import EdgeClient
from gateway.storage.web_logins import DayUsage, WebLogins

MAX_DAYS = 92
DEFAULT_DAYS = 14


def parse_days(text: str | None) -> int | None:
    """1…MAX_DAYS, DEFAULT_DAYS when absent; None when not a whole number in range."""
    if text is None or text == "":
        return DEFAULT_DAYS
    if not text.isdigit() or not 1 <= int(text) <= MAX_DAYS:
        return None
    return int(text)


def today_of(answer: dict[str, Any], day: str) -> list[DayUsage]:
    """Today's usage per node from the master's `/v1/edge/usage` answer."""
    found = []
    for node in answer.get("nodes") or []:
        figures = node.get("today") or {}
        found.append(
            DayUsage(
                day=day,
                node_id=str(node.get("node_id")),
                node_name=str(node.get("device_name") or node.get("node_id")),
                input_tokens=int(figures.get("total_input_tokens") or 0),
                output_tokens=int(figures.get("total_output_tokens") or 0),
                cost_usd=float(figures.get("estimated_cost") or 0.0),
            )
        )
    return found


async def usage_days(
    edge: EdgeClient, logins: WebLogins, subject: str, days: int, now: datetime | None = None
) -> list[dict[str, Any]]:
    now = now or datetime.now(UTC)
    today = now.date()
    await logins.record_usage(subject, today_of(await edge.usage(subject), today.isoformat()))
    first = (today - timedelta(days=days - 1)).isoformat()
    return [
        {
            "date": u.day,
            "node_id": u.node_id,
            "node_name": u.node_name,
            "input_tokens": u.input_tokens,
            "output_tokens": u.output_tokens,
            "cost_usd": u.cost_usd,
        }
        for u in await logins.usage_since(subject, first)
    ]
