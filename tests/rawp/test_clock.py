"""Ids and timestamps: the cheap forms the client stamps every frame with (issue 20)."""

import time
import uuid
from datetime import UTC, datetime

from rawp.clock import Clock, FakeClock, is_uuid4, iso, new_id


def test_new_id_is_a_canonical_uuid4_and_does_not_repeat():
    ids = [new_id() for _ in range(2000)]
    assert len(set(ids)) == len(ids)
    for value in ids:
        assert is_uuid4(value)
        parsed = uuid.UUID(value)
        assert parsed.variant == uuid.RFC_4122 and str(parsed) == value


def test_timestamp_is_iso_of_now_to_the_millisecond():
    clock = Clock()
    for _ in range(200):
        before = iso(datetime.now(UTC))
        stamp = clock.timestamp()
        after = iso(datetime.now(UTC))
        assert before <= stamp <= after
        time.sleep(0.0002)  # cross millisecond boundaries: the cached stamp must move on
    assert stamp.endswith("Z") and len(stamp) == len("2026-01-01T00:00:00.000Z")


def test_a_fake_clock_stamps_its_own_time():
    clock = FakeClock()
    clock.advance(1.5)
    assert clock.timestamp() == iso(clock.now()) == "2026-01-01T00:00:01.500Z"
