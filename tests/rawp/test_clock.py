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


def test_threads_never_share_an_id():
    """Ids come from batches (issue 35): two threads drawing at once must never get the same."""
    from concurrent.futures import ThreadPoolExecutor

    from rawp.clock import ID_BATCH

    with ThreadPoolExecutor(4) as pool:
        drawn = list(pool.map(lambda _: [new_id() for _ in range(5 * ID_BATCH)], range(8)))
    every = [value for ids in drawn for value in ids]
    assert len(set(every)) == len(every) == 40 * ID_BATCH


def test_a_forked_child_does_not_repeat_its_parents_ids():
    """A child forked with a batch half used must not hand out the parent's next ids."""
    import os

    new_id()  # a batch is made and under way
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next ids, to the parent
        os.close(read)
        os.write(write, ",".join(new_id() for _ in range(64)).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        child = set(pipe.read().split(","))
    os.waitpid(pid, 0)
    parent = {new_id() for _ in range(64)}
    assert len(child) == 64 and not child & parent


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
