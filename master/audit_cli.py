"""`rawp master audit`: the approval audit (issue 15 §4) for the operator, from the database.

It reads the same database the server writes (SQLite in the state dir or `--database-url`),
so it works whether or not a master is running. Every user's records are shown unless `--user`
narrows them; the Edge API's `GET /v1/edge/audit` is the per-user view.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from typing import Any

from master.settings import MasterSettings
from rawp.clock import Clock, parse_iso
from runtime.cli import CommandError

RELATIVE = re.compile(r"^(\d+)([smhd])$")
UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}
COLUMNS = (
    ("recorded_at", "TIME (UTC)", 24),
    ("outcome", "OUTCOME", 8),
    ("actor", "WHO", 30),
    ("option_label", "OPTION", 16),
    ("tool_name", "TOOL", 12),
    ("input_preview", "INPUT", 40),
    ("platform", "PLATFORM", 8),
    ("user_id", "OWNER", 30),
    ("node_id", "NODE", 36),
    ("session_id", "SESSION", 36),
)


def since_time(text: str | None, now: datetime) -> datetime | None:
    """`--since`: an ISO 8601 time, or an age such as 30m, 12h, 7d."""
    if text is None:
        return None
    relative = RELATIVE.match(text.strip())
    if relative:
        return now - timedelta(**{UNITS[relative.group(2)]: int(relative.group(1))})
    try:
        return parse_iso(text.strip())
    except ValueError:
        raise CommandError(f"--since {text!r}: use an ISO 8601 time or an age like 12h") from None


async def records(
    settings: MasterSettings,
    clock: Clock,
    *,
    user: str | None,
    node: str | None,
    since: str | None,
    limit: int,
) -> list[dict[str, Any]]:
    from master.edge.usage.audit import describe
    from master.storage import audit
    from master.storage.db import Database
    from master.storage.migrations import migrate

    after = since_time(since, clock.now())
    settings.state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    db = Database(settings.database_address)
    try:
        await migrate(db)  # an older database gains the table; a listing then shows none
        async with db.connect() as conn:
            rows = await audit.listing(conn, user_id=user, node_id=node, since=after, limit=limit)
    finally:
        await db.dispose()
    return [describe(row) for row in rows]


def render(rows: list[dict[str, Any]], as_json: bool) -> str:
    if as_json:
        return json.dumps({"records": rows}, ensure_ascii=False, indent=2)
    if not rows:
        return "no approval records"
    lines = [_line({key: title for key, title, _ in COLUMNS})]
    lines += [_line(row) for row in rows]
    return "\n".join(lines)


def _line(row: dict[str, Any]) -> str:
    cells = []
    for key, _, width in COLUMNS:
        text = " ".join(str(row.get(key) or "-").split())  # one line per record, always
        cells.append(text if len(text) <= width else text[: width - 1] + "…")
        cells[-1] = cells[-1].ljust(width)
    return "  ".join(cells).rstrip()
