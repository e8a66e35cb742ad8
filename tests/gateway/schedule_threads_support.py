"""What the scheduled-run tests share (tests/gateway/test_schedule_threads_*.py, issue 30 §5).

A real master process runs on the wall clock, so the tests cannot move its time as the
scheduler's own tests do (tests/master/test_scheduler.py, a FakeClock). Instead a schedule is
made *due*: its `last_run_at` in the master's database is set to one second before its cron
expression's latest tick — exactly what the row holds when that tick has just fallen and not
yet run. The cron expression the tests use (`0 3 1 1 *`, 03:00 on January 1st) never ticks
during a test by itself, so every run a test sees is one it made due, and one tick is due at a
time (no catch-up, no missed run unless the test makes one).
"""

from __future__ import annotations

import asyncio
import inspect
import re
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from croniter import croniter
from sqlalchemy import select, update

from master.storage.db import SQLITE_FILE, Database
from master.storage.schema import schedules
from tests.edge.stack import EDGE_SECRET, edge_for
from tests.support import wait_for_http

YEARLY = "0 3 1 1 *"  # never ticks during a test by itself (module note)
SCAN = {"RAWP_SCHEDULE_SCAN_SECONDS": "0.2"}  # the master scans five times a second
POLL = {"RAWP_GATEWAY_SCHEDULE_POLL_SECONDS": "0.2"}  # the gateway polls as often
SCHEDULED_ID = re.compile(r"Scheduled `([0-9a-f-]+)`")


def sqlite_url(state_dir: Path) -> str:
    """The master's own SQLite database under its `--state-dir`."""
    return f"sqlite+aiosqlite:///{(state_dir / SQLITE_FILE).resolve()}"


def master_db_url(stack) -> str:
    state = Path(stack.master_args[stack.master_args.index("--state-dir") + 1])
    return sqlite_url(state)


async def make_due(db_url: str, schedule_id: str) -> datetime:
    """Set the schedule's `last_run_at` just before its latest tick (module note); the tick."""
    db = Database(db_url)
    try:
        async with db.connect() as conn:
            row = (await conn.execute(select(schedules).where(schedules.c.id == schedule_id))).one()
        tick = croniter(row.cron, datetime.now(UTC)).get_prev(datetime)
        async with db.begin() as conn:
            await conn.execute(
                update(schedules)
                .where(schedules.c.id == schedule_id)
                .values(last_run_at=tick - timedelta(seconds=1))
            )
        return tick
    finally:
        await db.dispose()


async def listed(master_url: str, subject: str, schedule_id: str) -> dict:
    """The schedule as its owner's `GET /v1/edge/schedules` lists it."""
    async with edge_for(master_url, subject) as edge:
        status, body = await edge.call("GET", "/v1/edge/schedules")
    assert status == 200, body
    return next(one for one in body["schedules"] if one["schedule_id"] == schedule_id)


def stop(proc) -> None:
    proc.terminate()
    proc.wait(timeout=30)


def start_master(stack) -> object:
    master = stack.processes.rawp(
        *stack.master_args,
        env={"RAWP_EDGE_SECRET": EDGE_SECRET, **stack.env},
        stdout=stack.master_log.open("ab"),
    )
    wait_for_http(f"{stack.master_url}/v1/edge/nodes", proc=master, timeout=60)
    return master


async def until(predicate, what: str, limit: float = 60.0) -> None:
    """Wait, bounded, for something another process does (`predicate` may be async)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        result = predicate()
        if inspect.isawaitable(result):
            result = await result
        if result:
            return
        await asyncio.sleep(0.1)  # a retry interval: the state is in another process
    raise AssertionError(f"{what} never happened within {limit}s")
