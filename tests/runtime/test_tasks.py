"""runtime.tasks: owned tasks — failures seen once with their traceback, nothing left running."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import subprocess
import sys

import pytest

from runtime import tasks
from runtime.tasks import TaskOwner, race


async def test_race_cancels_the_rest_when_one_finishes():
    cancelled = asyncio.Event()

    async def quick():
        return None

    async def forever():
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    await race(quick(), forever())
    assert cancelled.is_set()


async def test_race_raises_a_failure_as_itself_and_cancels_its_siblings():
    cancelled = asyncio.Event()

    async def broken():
        raise ValueError("receiver failed")

    async def forever():
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    with pytest.raises(ValueError, match="receiver failed"):
        await race(forever(), broken())
    assert cancelled.is_set()


async def test_race_passes_the_callers_cancellation_to_every_child():
    stopped = []

    async def forever(name):
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            stopped.append(name)
            raise

    outer = asyncio.get_running_loop().create_future()

    async def caller():
        outer.set_result(None)
        await race(forever("a"), forever("b"))

    async with asyncio.TaskGroup() as group:
        task = group.create_task(caller())
        await outer
        await asyncio.sleep(0)
        task.cancel()
    assert task.cancelled()
    assert sorted(stopped) == ["a", "b"]


async def test_owner_logs_a_childs_failure_once_and_keeps_its_siblings(caplog):
    caplog.set_level(logging.ERROR, logger="rawp.tasks")
    sibling_done = asyncio.Event()

    async def broken():
        raise RuntimeError("boom")

    async def sibling():
        await asyncio.sleep(0.01)
        sibling_done.set()

    async with TaskOwner("relay") as owner:
        failing = owner.spawn(broken(), name="reader")
        owner.spawn(sibling(), name="writer")
        await asyncio.wait_for(sibling_done.wait(), 5)
        await failing
    failures = [r for r in caplog.records if "reader failed" in r.getMessage()]
    assert len(failures) == 1
    assert failures[0].exc_info is not None and failures[0].exc_info[0] is RuntimeError


async def test_owner_close_cancels_and_awaits_every_child():
    started, stopped = asyncio.Event(), asyncio.Event()

    async def forever():
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            stopped.set()

    owner = await TaskOwner("server").start()
    owner.spawn(forever(), name="sweep")
    await started.wait()
    assert len(owner) == 1
    await owner.close()
    assert stopped.is_set() and len(owner) == 0 and not owner.running


async def test_close_cancels_again_a_child_that_lost_its_cancellation(caplog, monkeypatch):
    """Rule 2: a loop whose cancellation is swallowed once (as Python 3.11's wait_for does when
    its inner future finishes in the same turn) would hold close() forever without a second
    cancellation; the warning names the child and the function it waits in."""
    monkeypatch.setattr(tasks, "RECANCEL_AFTER", 0.2)
    caplog.set_level(logging.WARNING, logger="rawp.tasks")
    swallowed, started = [], asyncio.Event()

    async def wait_for_a_message():
        await asyncio.Event().wait()

    async def reader():
        started.set()
        while True:
            try:
                await wait_for_a_message()
            except asyncio.CancelledError:
                if swallowed:
                    raise
                swallowed.append(1)  # lost on the way, as the reader's loop goes on

    owner = await TaskOwner("relay").start()
    owner.spawn(reader(), name="reader")
    await started.wait()
    await asyncio.wait_for(owner.close(), 10)
    assert swallowed == [1] and len(owner) == 0
    warnings = [r.getMessage() for r in caplog.records if "cancelling again" in r.getMessage()]
    assert len(warnings) == 1, warnings
    assert "reader at " in warnings[0] and "(wait_for_a_message)" in warnings[0]


async def test_a_child_that_ends_when_cancelled_gets_no_second_cancellation(caplog, monkeypatch):
    monkeypatch.setattr(tasks, "RECANCEL_AFTER", 0.05)
    caplog.set_level(logging.WARNING, logger="rawp.tasks")
    cleaned = asyncio.Event()

    async def slow_to_clean_up():
        try:
            await asyncio.Event().wait()
        finally:
            await asyncio.sleep(0.01)  # well within RECANCEL_AFTER
            cleaned.set()

    owner = await TaskOwner("server").start()
    owner.spawn(slow_to_clean_up(), name="edge")
    await asyncio.sleep(0)
    await owner.close()
    await asyncio.sleep(0.1)  # past RECANCEL_AFTER: the timer must be gone with the close
    assert cleaned.is_set()
    assert not [r for r in caplog.records if "cancelling again" in r.getMessage()]


async def test_owner_refuses_to_spawn_when_not_running():
    owner = TaskOwner("closed")

    async def work():
        return 1

    with pytest.raises(RuntimeError, match="not running"):
        owner.spawn(work())


class Flaky:
    """A loop that fails its first `deaths` runs, with state kept on the object (like a
    writer's queue) that a restart must not lose."""

    def __init__(self, deaths: int) -> None:
        self.deaths = deaths
        self.runs = 0
        self.kept: list[str] = []
        self.serving = asyncio.Event()

    async def run(self) -> None:
        self.runs += 1
        if self.runs <= self.deaths:
            self.kept.append(f"queued before death {self.runs}")
            raise RuntimeError(f"death {self.runs}")
        self.serving.set()
        await asyncio.Event().wait()


async def test_a_critical_child_that_dies_is_started_again_keeping_its_state(
    caplog, critical_tasks_end_the_test
):
    caplog.set_level(logging.WARNING, logger="rawp.tasks")
    loop = Flaky(deaths=2)
    async with TaskOwner("relay") as owner:
        owner.spawn_critical(loop.run, name="writer")
        await asyncio.wait_for(loop.serving.wait(), 10)
        assert loop.kept == ["queued before death 1", "queued before death 2"]
    assert critical_tasks_end_the_test == []  # within the bound: the process goes on
    failures = [r for r in caplog.records if r.getMessage() == "relay: writer failed"]
    assert [r.exc_info[0] for r in failures] == [RuntimeError, RuntimeError]  # each, traced
    restarts = [r.getMessage() for r in caplog.records if "starting writer again" in r.getMessage()]
    assert restarts == [
        "relay: starting writer again (restart 1 of 3)",
        "relay: starting writer again (restart 2 of 3)",
    ]


async def test_a_critical_child_that_keeps_dying_ends_the_process_once(
    caplog, critical_tasks_end_the_test
):
    caplog.set_level(logging.WARNING, logger="rawp.tasks")
    loop = Flaky(deaths=100)
    async with TaskOwner("relay") as owner:
        task = owner.spawn_critical(loop.run, name="writer", restarts=2)
        await asyncio.wait_for(task, 10)
    assert loop.runs == 3  # the first run and two restarts, then no more
    assert critical_tasks_end_the_test == ["relay: writer"]
    assert tasks.failed() == "relay: writer"
    assert tasks.exit_status(0) == tasks.EXIT_FATAL
    stops = [r for r in caplog.records if r.levelno == logging.CRITICAL]
    assert len(stops) == 1 and "cannot work without it" in stops[0].getMessage()
    critical_tasks_end_the_test.clear()  # expected here: the fixture must not fail the test


async def test_a_critical_child_returning_is_a_death_and_cancelling_is_not(
    caplog, critical_tasks_end_the_test
):
    caplog.set_level(logging.WARNING, logger="rawp.tasks")
    runs = []

    async def returns_at_once():
        runs.append(1)

    async with TaskOwner("relay") as owner:
        task = owner.spawn_critical(returns_at_once, name="reader", restarts=1)
        await asyncio.wait_for(task, 10)
    assert len(runs) == 2
    assert critical_tasks_end_the_test == ["relay: reader"]
    critical_tasks_end_the_test.clear()

    stopped = Flaky(deaths=0)
    async with TaskOwner("relay") as owner:
        owner.spawn_critical(stopped.run, name="leases")
        await asyncio.wait_for(stopped.serving.wait(), 10)
    assert stopped.runs == 1 and critical_tasks_end_the_test == []  # closed: no restart


async def test_a_critical_child_that_swallows_its_owners_cancellation_is_not_restarted(
    caplog, critical_tasks_end_the_test
):
    """Rule 3: a loop that ends because it swallowed the close's cancellation is not a death:
    not logged as one, not started again (a restart would run on after the close)."""
    caplog.set_level(logging.WARNING, logger="rawp.tasks")
    runs, serving = [], asyncio.Event()

    async def swallows():
        runs.append(1)
        serving.set()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.Event().wait()

    owner = await TaskOwner("relay").start()
    owner.spawn_critical(swallows, name="reader")
    await serving.wait()
    await asyncio.wait_for(owner.close(), 10)
    assert runs == [1] and critical_tasks_end_the_test == []
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


ENDS_ITSELF = """
import asyncio, logging, signal, sys
from runtime import tasks

async def main():
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    async def broken():
        raise RuntimeError("the writer broke")
    async with tasks.TaskOwner("relay") as owner:
        owner.spawn_critical(broken, name="writer", restarts=1)
        await stop.wait()  # what a server does: SIGTERM is its clean shutdown
    print("shut down cleanly", flush=True)
    return 0

logging.basicConfig(level=logging.WARNING)
sys.exit(tasks.exit_status(asyncio.run(main())))
"""


def test_a_process_whose_critical_task_keeps_dying_shuts_down_and_exits_non_zero():
    done = subprocess.run(
        [sys.executable, "-c", ENDS_ITSELF], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == tasks.EXIT_FATAL, done.stderr
    assert done.stdout == "shut down cleanly\n"  # through its own SIGTERM path, not killed
    assert done.stderr.count("CRITICAL") == 1
    assert done.stderr.count("RuntimeError: the writer broke") == 2  # each death, traced
