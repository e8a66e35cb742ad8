"""A watchdog for one test at a time: a test that hangs says where, and the run goes on.

A loaded CI run once stalled for half an hour in one test's teardown (an async fixture closing
two Redis relays), with nothing in the log to say which test or which await: pytest prints a
test's result only once its teardown ends, and a worker's Python stack shows the event loop's
`select`, not the coroutines waiting in it. So every test's setup, call and teardown together
get `HANG_SECONDS`; past that, from a thread:

1. every thread's stack and every unfinished asyncio task's stack (what each coroutine awaits)
   go to a file under the run's temporary directory and to the worker's stderr;
2. every unfinished task of the loop running in the main thread (the test's) is cancelled
   from that loop's own thread (`call_soon_threadsafe`), so the awaited step ends with a
   `CancelledError` that pytest reports as that test's error, with the dump's path added to
   the report.

A test that only takes long is unaffected below the limit; the longest files take ~100 s on a
quiet machine, a single test far less.
"""

from __future__ import annotations

import asyncio
import faulthandler
import gc
import inspect
import io
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

HANG_SECONDS = float(os.environ.get("RAWP_TEST_HANG_SECONDS", "600"))


def _unfinished_tasks() -> list[asyncio.Task]:
    """Every asyncio task in the process that has not finished (found by the collector:
    another thread cannot ask the loop, which is inside `select`)."""
    return [o for o in gc.get_objects() if isinstance(o, asyncio.Task) and not o.done()]


def awaits(coro: object) -> list[str]:
    """`file:line in function` for a coroutine and each one it awaits, down to the innermost
    (`Task.print_stack` shows only the outermost frame of a suspended task). An async
    generator's `__anext__()` (a fixture's teardown) hides its generator: it is found among
    the awaiting frame's locals."""
    lines = []
    while coro is not None:
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
        frame = frame or getattr(coro, "ag_frame", None)
        if frame is not None:
            code = frame.f_code
            lines.append(f"{code.co_filename}:{frame.f_lineno} in {code.co_name}")
        awaited = (
            getattr(coro, "cr_await", None)
            or getattr(coro, "gi_yieldfrom", None)
            or getattr(coro, "ag_await", None)
        )
        if awaited is not None and not _has_frame(awaited) and frame is not None:
            running = [v for v in frame.f_locals.values() if inspect.isasyncgen(v) and v.ag_await]
            awaited = running[0] if running else awaited
        coro = awaited
    return lines


def _has_frame(awaitable: object) -> bool:
    return any(hasattr(awaitable, name) for name in ("cr_frame", "gi_frame", "ag_frame"))


def _dump(nodeid: str, seconds: float) -> Path:
    out = io.StringIO()
    out.write(f"test {nodeid} still running after {seconds:.0f} s\n\n--- threads\n")
    with tempfile.TemporaryFile("w+") as threads:  # faulthandler writes to a real file
        faulthandler.dump_traceback(file=threads, all_threads=True)
        threads.seek(0)
        out.write(threads.read())
    out.write("\n--- unfinished asyncio tasks, each with the chain of awaits it is in\n")
    for task in _unfinished_tasks():
        out.write(f"\n{task!r}\n")
        try:
            out.writelines(f"  {line}\n" for line in awaits(task.get_coro()))
        except Exception as exc:  # a frame changing under us: say so and go on
            out.write(f"  (not readable: {exc!r})\n")
    name = "".join(c if c.isalnum() else "_" for c in nodeid)[-120:]
    path = Path(tempfile.gettempdir()) / f"rawp-hang-{os.getpid()}-{name}.txt"
    path.write_text(out.getvalue())
    sys.__stderr__.write(out.getvalue())
    sys.__stderr__.flush()
    return path


def _cancel_the_tests_tasks() -> None:
    """Cancel the unfinished tasks of the loop running in the main thread (the test's own);
    loops that fixtures run in threads of their own are left alone."""
    main = threading.main_thread().ident
    for task in _unfinished_tasks():
        loop = task.get_loop()
        if getattr(loop, "_thread_id", None) == main and not loop.is_closed():
            loop.call_soon_threadsafe(task.cancel)


class HangWatch:
    """`with HangWatch(nodeid):` around one test's protocol (tests/conftest.py)."""

    def __init__(self, nodeid: str, seconds: float = HANG_SECONDS) -> None:
        self.nodeid = nodeid
        self.seconds = seconds
        self.report: Path | None = None
        self._done = threading.Event()
        self._began = time.monotonic()
        self._thread = threading.Thread(target=self._watch, name="rawp-hang-watch", daemon=True)

    def __enter__(self) -> HangWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._done.set()
        self._thread.join()

    def _watch(self) -> None:
        if self._done.wait(self.seconds):
            return
        self.report = _dump(self.nodeid, time.monotonic() - self._began)
        _cancel_the_tests_tasks()
