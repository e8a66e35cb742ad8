"""Identifiers and time, injectable so that tests never sleep to see something expire."""

from __future__ import annotations

import os
import secrets
import time
import uuid
from datetime import UTC, datetime, timedelta

# new_id's ready-made ids: one `getrandom` call makes ID_BATCH of them. A syscall per id cost as
# much as the rest of a relayed frame's envelope (issue 35). `list.pop` and `list.extend` are
# each atomic, so threads never share an id; a forked child starts with none of its parent's.
ID_BATCH = 256
_ids: list[str] = []
_VARIANT = dict(zip("0123456789abcdef", "89ab" * 4, strict=True))  # RFC 4122: 10xx
os.register_at_fork(after_in_child=_ids.clear)


def _fresh_ids() -> list[str]:
    pool = os.urandom(16 * ID_BATCH).hex()
    variant = _VARIANT
    return [
        f"{pool[i : i + 8]}-{pool[i + 8 : i + 12]}-4{pool[i + 13 : i + 16]}"
        f"-{variant[pool[i + 16]]}{pool[i + 17 : i + 20]}-{pool[i + 20 : i + 32]}"
        for i in range(0, 32 * ID_BATCH, 32)
    ]


def new_id() -> str:
    """A UUID v4 string: `message_id`, `session_id`, `query_id` (DPS §2).

    What `str(uuid.uuid4())` gives — 122 random bits from the OS, the version and variant bits
    set — taken from a batch made at once: every frame a client sends takes one, and the
    `UUID` object, then a syscall per id, cost more than the frame's JSON (issues 20, 35).
    """
    while True:
        try:
            return _ids.pop()
        except IndexError:
            _ids.extend(_fresh_ids())


def new_secret(nbytes: int = 32) -> str:
    """A URL-safe random secret; 32 bytes gives 43 characters (pairing tokens need ≥ 32, §3.1)."""
    return secrets.token_urlsafe(nbytes)


def is_uuid4(value: object) -> bool:
    """True for a canonical UUID v4 string (§7.1: a malformed UUID is a 400)."""
    if not isinstance(value, str) or len(value) != 36:
        return False
    try:
        parsed = uuid.UUID(value)
    except ValueError:
        return False
    return parsed.version == 4 and str(parsed) == value.lower()


def iso(moment: datetime) -> str:
    """ISO 8601 in UTC with millisecond precision and a `Z`, as every RAWP timestamp is written."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_iso(value: str) -> datetime:
    """Read an ISO 8601 timestamp; a time without a zone is taken as UTC. Raises ValueError."""
    moment = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


class Clock:
    """Wall time and a monotonic counter. Services take one; tests pass a `FakeClock`."""

    _stamp_ms = -1
    _stamp = ""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def timestamp(self) -> str:
        """`iso(now())`, worked out once per millisecond: a frame's `timestamp` has millisecond
        precision, and a client streaming sends many frames within one (issue 20)."""
        ms = time.time_ns() // 1_000_000
        if ms != self._stamp_ms:
            self._stamp = iso(datetime.fromtimestamp(ms / 1000, UTC))
            self._stamp_ms = ms
        return self._stamp

    def monotonic(self) -> float:
        return time.monotonic()


class FakeClock(Clock):
    """A clock that moves only when told to."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 1, 1, tzinfo=UTC)
        self._mono = 1000.0

    def now(self) -> datetime:
        return self._now

    def monotonic(self) -> float:
        return self._mono

    def timestamp(self) -> str:
        return iso(self._now)

    def advance(self, seconds: float) -> None:
        self._now += timedelta(seconds=seconds)
        self._mono += seconds


SYSTEM_CLOCK = Clock()
