"""The scheduler of scheduled prompts (issue 30 §5, docs/schedules.md).

Rules:

1. Every replica scans every `scan_s` seconds (RAWP_SCHEDULE_SCAN_SECONDS, 20 by default; the
   master's `TaskOwner` child, started with the Edge API and closed with it). Times come from
   the injected clock, so tests move time.
2. A schedule is due when a tick of its cron expression fell after its `last_run_at`
   (schedule_spec rule 3). The replica first claims the latest tick with the conditional
   UPDATE of `storage.schedules.claim`; the replica whose UPDATE matched no row does nothing.
   So one tick is run once across replicas, whichever of them scans first.
3. At most one catch-up: of several ticks that fell while the master was away, only the latest
   runs; the others are added to `missed_runs` and logged once, in the claim itself.
4. A run that cannot start — the node offline, the agent refusing, the prompt refused by the
   security policy or a budget — is recorded as one more missed run with its reason in
   `last_outcome`; it is not retried: the next tick is the next chance.
5. A scan that cannot read the database logs and waits for the next scan (issue 29 §4).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from master.edge.sessions.schedule_spec import due
from master.storage import schedules as store
from master.storage.db import Database, utc
from rawp.clock import Clock
from runtime.tasks import TaskOwner

log = logging.getLogger("rawp.master.edge.scheduler")

SCAN_SECONDS = 20.0


@dataclass(frozen=True)
class RunResult:
    session_id: str | None  # None: the run did not start (rule 4)
    outcome: str  # what the owner reads in the listing


Runner = Callable[[Any], Awaitable[RunResult]]  # a schedule row → what its run did


class Scheduler:
    def __init__(
        self, db: Database, clock: Clock, run: Runner, scan_s: float = SCAN_SECONDS
    ) -> None:
        self._db = db
        self._scan_s = scan_s
        self._clock = clock
        self._run = run
        self._tasks = TaskOwner("scheduler", log)

    async def start(self) -> None:
        await self._tasks.start()
        self._tasks.spawn(self._loop(), name="schedule-scan")

    async def close(self) -> None:
        await self._tasks.close()

    @property
    def running(self) -> bool:
        """Rule 1: the scan loop is a live child of this scheduler's owner."""
        return self._tasks.running and len(self._tasks) == 1

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self._scan_s)
            try:
                await self.scan()
            except Exception as exc:  # rule 5
                log.warning("schedule scan failed, the next one tries again: %s", exc)

    async def scan(self) -> int:
        """One pass over the schedules (rule 2); the number of runs this replica started."""
        now = self._clock.now()
        async with self._db.connect() as conn:
            rows = await store.active(conn)
        started = 0
        for row in rows:
            if await self._maybe_run(row, now):
                started += 1
        return started

    async def _maybe_run(self, row: Any, now) -> bool:
        ticks = due(row.cron, row.timezone, utc(row.last_run_at), now)
        if ticks is None:
            return False
        async with self._db.begin() as conn:
            if not await store.claim(conn, row, ticks.tick, ticks.missed):
                return False  # another replica took this tick (rule 2)
        if ticks.missed:
            log.warning(
                "schedule %s: %d run(s) missed while the master or node was away; running the "
                "latest once",
                row.id,
                ticks.missed,
            )
        try:
            result = await self._run(row)
        except Exception as exc:  # rule 4: recorded, never raised into the scan
            log.exception("schedule %s: the run failed", row.id)
            result = RunResult(None, f"missed: {exc}")
        async with self._db.begin() as conn:
            await store.record_run(
                conn, row.id, result.session_id, result.outcome, 0 if result.session_id else 1
            )
        return result.session_id is not None
