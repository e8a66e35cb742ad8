"""rawp.tasks: owned tasks — failures seen once with their traceback, nothing left running."""

from __future__ import annotations

import asyncio
import logging

import pytest

from rawp.tasks import TaskOwner, race


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


async def test_owner_refuses_to_spawn_when_not_running():
    owner = TaskOwner("closed")

    async def work():
        return 1

    with pytest.raises(RuntimeError, match="not running"):
        owner.spawn(work())
