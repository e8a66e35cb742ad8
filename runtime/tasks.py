"""Owned tasks (issue 14 §6): every task has an owner that awaits it and sees its failure.

Two shapes, both on `asyncio.TaskGroup` (rules 1–2), and what happens when a task the process
cannot do without dies (rules 3–4, issue 29 §4):

1. `race(*coroutines)` — work that lives inside one call, such as a served socket's sender and
   receiver: they run until the first of them finishes, then the rest are cancelled and
   awaited. A failure is raised once, as itself (not wrapped in an ExceptionGroup), so the
   connection boundary that called `race` logs it with its traceback and ends the connection;
   cancellation of the caller passes through to every child.
2. `TaskOwner` — a long-lived object that starts work over its life (a server's sessions, a
   relay's loops, a session's searches). Entered once around that life (`async with owner:`,
   or `await owner.start()` … `await owner.close()` from a server's startup and shutdown,
   which Quart runs in one lifespan task). `spawn()` starts a child in its group. A child is
   an independent unit: its failure is logged once, with its traceback, under the owner's
   name, and ends that child only — never its siblings or the owner. `close()` cancels what
   is left and waits for it, so nothing outlives the owner. A child still running
   `RECANCEL_AFTER` seconds after its cancellation is cancelled again (and again, each such
   interval), with a warning naming it and where it waits: a cancellation can be lost on the
   way — Python 3.11's `asyncio.wait_for` returns the inner result when it completes in the
   same turn as the cancel, and a library may catch `CancelledError` — and one lost
   cancellation in a loop would otherwise hold `close()` forever (issue 32: a relay's close
   hung a test run 25 minutes).
3. A *critical* child (`spawn_critical(start, name=…)`) is one without which the process cannot
   do its job (a master relay's Redis reader, writer and lease loop; a gateway replica's lease
   renewals, heartbeat and bus reader): it must run until its owner closes. Its death — an
   exception, or returning — is logged with its traceback and it is started again (`start()`
   anew: state kept on its object, such as a writer's queue, is not lost), at most `restarts`
   times within `RESTART_WINDOW` seconds. One death more ends the process: one CRITICAL line,
   then `end_process`, never a process that lingers without the child. Cancelling is not a
   death: it is how an owner stops its children, and neither is a child that ends while
   its owner closes (a cancellation the child swallowed): it is not started again.
4. `end_process` sends the process SIGTERM, which every long-running RAWP program answers
   with its clean shutdown (leases released, queues flushed as far as they go), and marks
   the process as failed so its entry point exits with `EXIT_FATAL` (non-zero: a supervisor
   or compose restarts it, and other replicas take its sessions over). A test puts its own
   handler in place with `on_fatal`.

This is the one module of the protocol core that imports asyncio: it owns tasks, it serves
nothing (architecture.md, Layout; tests/test_layout.py names it).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar

log = logging.getLogger("rawp.tasks")

T = TypeVar("T")

RESTARTS = 3  # rule 3: a critical child is started again at most this many times …
RESTART_WINDOW = 60.0  # … within this many seconds
RESTART_PAUSE = 0.2  # seconds before a restart (times the deaths in the window): no hot loop
RECANCEL_AFTER = 5.0  # rule 2: seconds a cancelled child may take before it is cancelled again
EXIT_FATAL = 70  # rule 4 (EX_SOFTWARE): the process ended because a critical task died

_failed: list[str] = []  # what ended the process (rule 4), for its entry point's exit status


def _terminate(what: str) -> None:
    os.kill(os.getpid(), signal.SIGTERM)


_handler: Callable[[str], None] = _terminate


def end_process(what: str) -> None:
    """Rule 4: `what` died for good; the process stops cleanly and exits non-zero."""
    _failed.append(what)
    _handler(what)


def failed() -> str | None:
    """What ended the process through `end_process`, if anything (its entry point then exits
    with `EXIT_FATAL`)."""
    return _failed[0] if _failed else None


def exit_status(status: int) -> int:
    """The exit status of an entry point whose program returned `status` (rule 4)."""
    return EXIT_FATAL if _failed else status


@contextlib.contextmanager
def on_fatal(handler: Callable[[str], None]) -> Iterator[None]:
    """Rule 4 with `handler` in place of SIGTERM, for the duration (tests)."""
    global _handler
    before, _handler = _handler, handler
    try:
        yield
    finally:
        _handler = before
        _failed.clear()


async def race(*coroutines: Coroutine[Any, Any, Any]) -> None:
    """Run `coroutines` until the first finishes; cancel and await the rest (rule 1)."""
    # A bare future, not an asyncio.Event (which keeps a deque for its whole life): a master
    # has one race per edge socket, thousands of them waiting at once (issue 20 §3).
    finished = asyncio.get_running_loop().create_future()

    def first_done(_task: asyncio.Task) -> None:
        if not finished.done():
            finished.set_result(None)

    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(coroutine) for coroutine in coroutines]
            for task in tasks:
                task.add_done_callback(first_done)
            await finished
            for task in tasks:
                task.cancel()
    except BaseExceptionGroup as group_error:
        raise _single(group_error) from None


_ASYNCIO_DIR = os.path.dirname(asyncio.__file__)
_AWAIT_CHAIN = (("cr_frame", "cr_await"), ("gi_frame", "gi_yieldfrom"), ("ag_frame", "ag_await"))


def _where(task: asyncio.Task) -> str:
    """A task's name and the innermost place it waits outside asyncio itself, following its
    chain of awaits (a task's own stack shows only its outermost frame)."""
    awaited, place = task.get_coro(), ""
    while awaited is not None:
        link = next((pair for pair in _AWAIT_CHAIN if hasattr(awaited, pair[0])), None)
        if link is None:
            break  # a future or another awaitable: the chain ends here
        frame = getattr(awaited, link[0])
        if frame is not None and not frame.f_code.co_filename.startswith(_ASYNCIO_DIR):
            place = f" at {frame.f_code.co_filename}:{frame.f_lineno} ({frame.f_code.co_name})"
        awaited = getattr(awaited, link[1])
    return task.get_name() + place


def _single(group_error: BaseExceptionGroup) -> BaseException:
    """The one failure of a group, as itself; several stay grouped (rare: two at once)."""
    errors = group_error.exceptions
    return errors[0] if len(errors) == 1 else group_error


class TaskOwner:
    """The owner of tasks a long-lived object starts over its life (rule 2)."""

    def __init__(self, name: str, logger: logging.Logger | None = None) -> None:
        self.name = name
        self._log = logger or log
        self._group: asyncio.TaskGroup | None = None
        self._children: set[asyncio.Task] = set()
        self._closed = False
        self._again: asyncio.TimerHandle | None = None  # rule 2's next cancellation, closing

    async def start(self) -> TaskOwner:
        if self._group is not None:
            raise RuntimeError(f"{self.name}: started twice")
        self._group = asyncio.TaskGroup()
        await self._group.__aenter__()
        return self

    async def close(self) -> None:
        """Cancel every child still running and wait for all of them (idempotent)."""
        group, self._group = self._group, None
        self._closed = True
        if group is None:
            return
        for task in list(self._children):
            task.cancel()
        self._cancel_again_later(1)
        try:
            await group.__aexit__(None, None, None)
        finally:
            if self._again is not None:
                self._again.cancel()

    def _cancel_again_later(self, times: int) -> None:
        loop = asyncio.get_running_loop()
        self._again = loop.call_later(RECANCEL_AFTER, self._cancel_again, times)

    def _cancel_again(self, times: int) -> None:
        """Rule 2: cancel once more the children a cancellation has not ended yet."""
        stuck = [task for task in self._children if not task.done()]
        if not stuck:
            return
        self._log.warning(
            "%s: %d task(s) still running %g s after being cancelled; cancelling again: %s",
            self.name, len(stuck), RECANCEL_AFTER * times, "; ".join(map(_where, stuck)),
        )  # fmt: skip
        for task in stuck:
            task.cancel()
        self._cancel_again_later(times + 1)

    async def __aenter__(self) -> TaskOwner:
        return await self.start()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    @property
    def running(self) -> bool:
        return self._group is not None

    def __len__(self) -> int:
        return len(self._children)

    def spawn(self, coroutine: Coroutine[Any, Any, T], *, name: str | None = None) -> asyncio.Task:
        """Start `coroutine` as a child; its failure is logged here and ends it alone."""
        if self._group is None:
            coroutine.close()  # never started: no "was never awaited" warning
            raise RuntimeError(f"{self.name}: not running, cannot start {name or 'a task'}")
        label = name or getattr(coroutine, "__qualname__", "task")
        task = self._group.create_task(self._supervised(coroutine, label), name=label)
        self._children.add(task)
        task.add_done_callback(self._children.discard)
        # Cancelled before it ever ran: close the coroutine, or Python warns it was never
        # awaited (closing one that ran to its end does nothing).
        task.add_done_callback(lambda _: coroutine.close())
        return task

    async def _supervised(self, coroutine: Coroutine[Any, Any, T], label: str) -> T | None:
        try:
            return await coroutine
        except asyncio.CancelledError:
            raise
        except Exception:
            self._log.exception("%s: %s failed", self.name, label)
            return None

    def spawn_critical(
        self,
        start: Callable[[], Coroutine[Any, Any, Any]],
        *,
        name: str,
        restarts: int = RESTARTS,
    ) -> asyncio.Task:
        """Rule 3: run `start()` until the owner closes, restarting it (bounded) when it dies,
        ending the process when it keeps dying."""
        return self.spawn(self._kept(start, name, restarts), name=name)

    async def _kept(
        self, start: Callable[[], Coroutine[Any, Any, Any]], label: str, restarts: int
    ) -> None:
        loop = asyncio.get_running_loop()
        deaths: list[float] = []
        while True:
            try:
                await start()
                if not self._closed:  # else it swallowed its owner's cancellation (rule 3)
                    self._log.error(
                        "%s: %s returned, but must run until its owner closes", self.name, label
                    )
            except asyncio.CancelledError:
                raise
            except Exception:
                self._log.exception("%s: %s failed", self.name, label)
            if self._closed:
                return  # rule 3: its owner is closing (or closed it): nothing is started again
            now = loop.time()
            deaths = [at for at in deaths if now - at < RESTART_WINDOW] + [now]
            if len(deaths) > restarts:
                self._log.critical(
                    "%s: %s died %d times within %d s; this process cannot work without it "
                    "and stops (issue 29 §4)",
                    self.name, label, len(deaths), RESTART_WINDOW,
                )  # fmt: skip
                end_process(f"{self.name}: {label}")
                return
            self._log.warning(
                "%s: starting %s again (restart %d of %d)", self.name, label, len(deaths), restarts
            )
            await asyncio.sleep(RESTART_PAUSE * len(deaths))
