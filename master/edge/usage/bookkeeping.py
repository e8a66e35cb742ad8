"""The relay's bookkeeping, written in rounds (issue 35 §3): every session's `last_activity_at`
and every `session.usage` record go to the database through one writer, one transaction a
round, whatever the number of sessions.

Before this, each active session spawned its own `last_activity_at` commit every 5 s and each
usage frame its own transaction: at 10,000 active sessions about 2,000 commits a second queued
on a pool of 15 connections, with nothing bounding how many waited.

Rules:

1. **Activity** is a mark in memory (`touch`: the latest time per session wins); the writer
   writes every mark once per `interval`, to the second, in one transaction: an `UPDATE … WHERE
   id IN (…)` for each second the marks fall in (master.storage.edge_sessions). Memory is
   one entry per session active in the interval. A round the database refuses keeps its marks
   (a newer mark wins) for the next round, with one warning line.
2. **Usage** is a group commit: `usage(row)` waits until the round that holds the row has
   committed, so a usage frame is still recorded *before* it is forwarded (E-WS-07, A-24) and
   the budgets read it. The writer starts a round as soon as a row waits, and every row that
   arrives while a round is being written goes into the next one: at a low rate a round is one
   row, at a high rate one transaction carries hundreds. At most `pending_limit` rows wait; a
   pump that finds the queue full waits for room (backpressure, never a dropped record).
3. A refused round is tried again after `RECORD_WAITS`; a row still refused after every try is
   logged as an error naming its frame and counted in `rawp_master_usage_unrecorded_total`
   (issue 29 §4), never dropped silently. Rows are kept once by `message_id`, so a round that
   is tried again, or written again at shutdown, records nothing twice.
4. `close()` stops the writer and writes what is left — the marks and the waiting rows — in one
   last round, so a stop loses no bookkeeping that reached the master.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime

from master.metrics import MasterMetrics
from master.storage import edge_sessions as session_store
from master.storage import usage as usage_store
from master.storage.db import Database
from rawp.clock import Clock
from runtime.tasks import TaskOwner

log = logging.getLogger("rawp.master.edge.usage")

ACTIVITY_INTERVAL = 5.0  # seconds between rounds that write `last_activity_at`
RECORD_WAITS = (0.1, 0.5, 1.5)  # seconds before each retry of a refused round
PENDING_LIMIT = 10_000  # usage rows waiting for a round, at most (rule 2)
ROUND_LIMIT = 1_000  # usage rows one round carries, at most: a transaction of bounded size

Waiting = tuple[usage_store.UsageRow, "asyncio.Future[bool | None]"]


class Bookkeeper:
    def __init__(
        self,
        db: Database,
        clock: Clock,
        metrics: MasterMetrics | None = None,
        *,
        interval: float = ACTIVITY_INTERVAL,
        pending_limit: int = PENDING_LIMIT,
    ) -> None:
        self._db = db
        self._clock = clock
        self._metrics = metrics
        self._interval = interval
        self._marks: dict[str, datetime] = {}
        self._waiting: asyncio.Queue[Waiting] = asyncio.Queue(pending_limit)
        self._round: list[Waiting] = []  # taken from the queue, not yet committed
        self._owner = TaskOwner("bookkeeping", log)
        self.rounds = 0  # transactions committed, for the tests and the benchmark

    async def start(self) -> None:
        await self._owner.start()
        self._owner.spawn_critical(self._write_rounds, name="bookkeeping writer")

    async def close(self) -> None:
        """Rule 4: stop the writer, then one last round with whatever is left."""
        if not self._owner.running:
            return
        await self._owner.close()
        self._take_waiting(limit=None)
        rows, self._round = self._round, []
        marks, self._marks = self._marks, {}
        if rows or marks:
            await self._commit(rows, marks, last=True)

    def touch(self, session_id: str) -> None:
        """Rule 1: the session was active now."""
        self._marks[session_id] = self._clock.now()

    async def usage(self, row: usage_store.UsageRow) -> bool | None:
        """Rule 2: True once recorded, False if its `message_id` was recorded before, None if
        the database refused it every try (rule 3)."""
        done: asyncio.Future[bool | None] = asyncio.get_running_loop().create_future()
        if not self._owner.running:  # no writer (not started, or stopped): a round of its own
            await self._commit([(row, done)], {})
        else:
            await self._waiting.put((row, done))
        return await done

    # --- the writer ------------------------------------------------------------------------

    async def _write_rounds(self) -> None:
        loop = asyncio.get_running_loop()
        marks_due = loop.time() + self._interval
        while True:
            if not self._round and self._waiting.empty():
                try:
                    async with asyncio.timeout(max(0.0, marks_due - loop.time())):
                        self._round.append(await self._waiting.get())
                except TimeoutError:
                    pass
            self._take_waiting(limit=ROUND_LIMIT)
            marks: dict[str, datetime] = {}
            if loop.time() >= marks_due:
                marks, self._marks = self._marks, {}
                marks_due = loop.time() + self._interval
            if self._round or marks:
                await self._commit(self._round, marks)
                self._round = []

    def _take_waiting(self, limit: int | None) -> None:
        while not self._waiting.empty() and (limit is None or len(self._round) < limit):
            self._round.append(self._waiting.get_nowait())

    async def _commit(
        self, rows: list[Waiting], marks: dict[str, datetime], *, last: bool = False
    ) -> None:
        """One round: every row and mark in one transaction, tried again (rule 3); each row's
        waiter gets its result either way."""
        for tries, wait in enumerate((*RECORD_WAITS, None), start=1):
            try:
                async with self._db.begin() as conn:
                    recorded = [await usage_store.record(conn, row) for row, _ in rows]
                    await session_store.touch_sessions(conn, marks)
            except Exception as exc:
                if not rows or wait is None or last:
                    self._give_up(rows, marks, exc, tries)
                    return
                log.warning("recording usage failed, retrying (%d records): %r", len(rows), exc)
                await asyncio.sleep(wait)
                continue
            self.rounds += 1
            for (_, done), result in zip(rows, recorded, strict=True):
                if not done.done():
                    done.set_result(result)
            return

    def _give_up(
        self, rows: list[Waiting], marks: dict[str, datetime], exc: Exception, tries: int
    ) -> None:
        """Rule 3 for the rows, rule 1 for the marks (kept for the next round)."""
        for session_id, moment in marks.items():
            self._marks.setdefault(session_id, moment)
        if marks:
            log.warning("could not store last_activity_at of %d sessions: %r", len(marks), exc)
        for n, (row, done) in enumerate(rows):
            log.error(  # the cause once, with its traceback; then a line for each frame
                "session %s: session.usage %s not recorded after %d tries; the budgets and "
                "usage figures miss it",
                row.session_id, row.message_id, tries,
                exc_info=exc if n == 0 else None,
            )  # fmt: skip
            if self._metrics is not None:
                self._metrics.usage_unrecorded.inc()
            if not done.done():
                done.set_result(None)
