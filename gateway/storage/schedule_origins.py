"""Where each schedule was made from chat, and which of its runs were posted (issue 30 §5,
gateway.sessions.schedule_command; migration 6 of gateway.storage.store_schema).

Rules:

1. `remember` is called once the master has made the schedule: the row names the platform and
   channel the command was typed in (a thread's parent channel) and the master user it is
   for, keyed by the master's schedule id.
2. A run is posted by whoever *claims* it: one conditional UPDATE from the session id the
   claimant read to the run's, which matches the row for exactly one of the gateway replicas
   sharing the database and for none after (the same on SQLite and PostgreSQL; the master's
   claim of a tick works the same way, master.storage.schedules). Missed runs are claimed the
   same way on the master's `missed_runs` count, so each is reported once.
3. A claim comes before the post: a gateway killed between the two loses that one post (the
   session still ran on the master and is listed by `/rawp sessions`); it never posts twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import delete, insert, select, update

from gateway.storage.store_db import Database
from gateway.storage.store_schema import schedule_origins


@dataclass(frozen=True)
class Origin:
    schedule_id: str
    platform: str
    channel_id: str
    subject: str
    posted_session_id: str  # '' before the first run was posted
    reported_missed: int


class ScheduleOrigins:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def remember(
        self, schedule_id: str, platform: str, channel_id: str, subject: str
    ) -> None:
        """Rule 1."""
        async with self._db.write() as conn:
            await conn.execute(
                insert(schedule_origins).values(
                    schedule_id=schedule_id,
                    platform=platform,
                    channel_id=channel_id,
                    subject=subject,
                    posted_session_id="",
                    reported_missed=0,
                    created_at=datetime.now(UTC).isoformat(),
                )
            )

    async def on_platform(self, platform: str) -> list[Origin]:
        """Every schedule made on `platform`, oldest first."""
        query = (
            select(schedule_origins)
            .where(schedule_origins.c.platform == platform)
            .order_by(schedule_origins.c.created_at, schedule_origins.c.schedule_id)
        )
        async with self._db.read() as conn:
            rows = (await conn.execute(query)).mappings().all()
        return [
            Origin(
                schedule_id=row["schedule_id"],
                platform=row["platform"],
                channel_id=row["channel_id"],
                subject=row["subject"],
                posted_session_id=row["posted_session_id"],
                reported_missed=row["reported_missed"],
            )
            for row in rows
        ]

    async def forget(self, schedule_id: str) -> None:
        """The schedule is gone from the master (deleted): nothing more to post."""
        async with self._db.write() as conn:
            await conn.execute(
                delete(schedule_origins).where(schedule_origins.c.schedule_id == schedule_id)
            )

    async def claim_run(self, origin: Origin, session_id: str) -> bool:
        """Rule 2: True for the one caller that moves the posted run to `session_id`."""
        return await self._claim(
            origin, schedule_origins.c.posted_session_id, origin.posted_session_id, session_id
        )

    async def claim_missed(self, origin: Origin, missed: int) -> bool:
        """Rule 2: True for the one caller that moves the reported count to `missed`."""
        return await self._claim(
            origin, schedule_origins.c.reported_missed, origin.reported_missed, missed
        )

    async def _claim(self, origin: Origin, column, seen, new) -> bool:
        async with self._db.write() as conn:
            result = await conn.execute(
                update(schedule_origins)
                .where(schedule_origins.c.schedule_id == origin.schedule_id, column == seen)
                .values({column.name: new})
            )
        return result.rowcount == 1
