"""What a schedule says and when it is due (issue 30 §5, docs/schedules.md).

Rules:

1. A schedule is a 5-field cron expression (minute hour day-of-month month day-of-week), or one
   of the phrases `every day H:MM`, `every weekday H:MM` (Monday to Friday), `every weekend
   H:MM`, `every <weekday name> H:MM` (`every monday 9:00`), read as the cron expression they
   stand for. Anything else is `400 INVALID_SCHEDULE` with a message that shows both forms.
2. Times are wall-clock times in the schedule's IANA time zone (UTC unless given); an unknown
   zone is `400 INVALID_TIMEZONE`.
3. `due(…)` names the ticks after the last claimed one up to now: the latest one is run, the
   others are missed (counted, never run: at most one catch-up). Counting stops at `COUNT_CAP`,
   so a schedule left for years costs a bounded scan.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter

from rawp.errors import BadRequest

COUNT_CAP = 1000
DAYS = ("sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday")
GROUPS = {"day": "*", "weekday": "1-5", "weekend": "0,6"}
PHRASE = re.compile(r"^every\s+([a-z]+)\s+(?:at\s+)?(\d{1,2}):(\d{2})$")
HELP = (
    'a schedule is a 5-field cron expression ("0 9 * * 1-5") or a phrase: "every day 18:30", '
    '"every weekday 9:00", "every weekend 10:00", "every monday 9:00"'
)


def to_cron(text: str) -> str:
    """Rule 1: the cron expression `text` stands for."""
    said = " ".join(str(text).strip().lower().split())
    found = PHRASE.match(said)
    if found:
        return _phrase(*found.groups())
    if len(said.split()) != 5 or not croniter.is_valid(said):
        raise BadRequest(f"not a schedule: {text!r}; {HELP}", "INVALID_SCHEDULE")
    return said


def _phrase(days: str, hour: str, minute: str) -> str:
    if int(hour) > 23 or int(minute) > 59:
        raise BadRequest(f"{hour}:{minute} is not a time of day; {HELP}", "INVALID_SCHEDULE")
    day = GROUPS.get(days)
    if day is None:
        name = days.removesuffix("s")  # "every mondays 9:00"
        if name not in DAYS:
            raise BadRequest(f"{days!r} is not a day; {HELP}", "INVALID_SCHEDULE")
        day = str(DAYS.index(name))
    return f"{int(minute)} {int(hour)} * * {day}"


def zone(name: str | None) -> str:
    """Rule 2: the zone's name, UTC by default."""
    if not name:
        return "UTC"
    try:
        ZoneInfo(str(name))
    except (ZoneInfoNotFoundError, ValueError):
        raise BadRequest(
            f"unknown time zone {name!r} (an IANA name such as Europe/Berlin)", "INVALID_TIMEZONE"
        ) from None
    return str(name)


@dataclass(frozen=True)
class Due:
    tick: datetime  # the latest tick, the one that runs (UTC)
    missed: int  # the ticks before it since the last run, not run (rule 3)


def due(cron: str, timezone: str, after: datetime, now: datetime) -> Due | None:
    """Rule 3: None when no tick fell in (after, now]."""
    ticks = croniter(cron, after.astimezone(ZoneInfo(timezone)))
    latest, count = None, 0
    while count < COUNT_CAP:
        tick = ticks.get_next(datetime)
        if tick > now:
            break
        latest, count = tick, count + 1
    if latest is None:
        return None
    return Due(tick=latest.astimezone(UTC), missed=count - 1)


def next_tick(cron: str, timezone: str, after: datetime) -> datetime:
    return croniter(cron, after.astimezone(ZoneInfo(timezone))).get_next(datetime).astimezone(UTC)
