"""Fixtures every suite may use. Suites add their own in tests/<package>/conftest.py."""

from __future__ import annotations

import compileall
import os
from pathlib import Path

import pytest

from tests import prefork
from tests.hang_watch import HangWatch
from tests.support import Processes


@pytest.fixture(autouse=True)
def critical_tasks_end_the_test():
    """A critical task that dies for good inside the test process (runtime.tasks rule 4) fails
    the test that caused it, instead of sending SIGTERM to the pytest worker."""
    from runtime import tasks

    ended: list[str] = []
    with tasks.on_fatal(ended.append):
        yield ended
    if ended:
        pytest.fail(f"a critical task died for good: {ended}")


@pytest.fixture
def processes():
    """Real child processes, all ended (with their process groups) after the test."""
    procs = Processes()
    try:
        yield procs
    finally:
        procs.close()


# The suite runs on six workers (pyproject: `-n 6 --dist loadfile --no-loadscope-reorder`) on
# two cores: with the `rawp` processes forked with their imports done (tests/prefork.py), most of
# its time is waiting on real processes (leases expiring, agents pausing, 20 trials per fault),
# which the other workers fill with other files. Each worker takes
# whole test files in collection order. The fault-injection and replica files take a
# minute or more each, so they are handed out first and the many short files fill the gaps
# around them; collected in alphabetical order they would start last and leave one worker
# idle at the end. The longest scenarios sit in files of their own for the same reason.
LONG_FIRST = (  # longest first (seconds on a quiet machine, `--durations`)
    "tests/gateway/test_replicas_failover_discord.py",  # ~105 (issue 19: 20 trials)
    "tests/gateway/test_replicas_failover.py",  # ~105
    "tests/docker/",  # ~20 warm (+100–160 the real compose run), ~60 more cold
    "tests/faults/test_prompt_delivery.py",  # ~80
    "tests/faults/test_prompt_delivery_killed.py",  # ~75
    "tests/faults/test_replica_death.py",  # ~50
    "tests/faults/test_master_freeze.py",  # ~45
    "tests/faults/test_master_death.py",  # ~40
    "tests/gateway/test_gateway_crash.py",  # ~75
    "tests/faults/",
    "tests/scale/",
    "tests/gateway/test_gateway_crash",
)


# Every `rawp` process, fake agent and fake platform the suite starts imports this project's
# modules. Where PYTHONDONTWRITEBYTECODE is set (as on the CI machines) Python never writes their
# bytecode, so each of those hundreds of processes compiled every module it imported again:
# about 15 % of the suite's CPU. The controller compiles the tree once before the workers start;
# Python reads bytecode whatever that variable says.
PACKAGES = ("rawp", "runtime", "master", "client", "gateway", "adapters", "rawp_app", "tests")


def pytest_configure(config):
    prefork.enable()  # the suite's processes are forked (tests/prefork.py); bench/'s are not
    if hasattr(config, "workerinput"):
        return  # an xdist worker: the controller compiled already
    root = Path(__file__).resolve().parent.parent
    for package in PACKAGES:
        compileall.compile_dir(root / package, quiet=1, workers=os.cpu_count() or 1)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """A test whose setup, call and teardown pass HANG_SECONDS is dumped and cancelled
    (tests/hang_watch.py), instead of stalling the whole run."""
    with HangWatch(item.nodeid) as watch:
        item.hang_watch = watch
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    watch = getattr(item, "hang_watch", None)
    report = outcome.get_result()
    if watch is not None and watch.report is not None:
        report.sections.append(("hang", f"stacks of the hang: {watch.report}"))
    if report.failed:
        report.sections.extend(process_logs(getattr(item, "funcargs", {})))


LOG_TAIL = 16_000  # characters of each process log a failed test's report shows


def process_logs(funcargs: dict) -> list[tuple[str, str]]:
    """The end of the master's and the client's logs of a failed test's `stack` (tests/edge/
    stack.py), so a failure on a busy CI machine says what the processes did meanwhile."""
    stack = funcargs.get("stack")
    sections = []
    for name in ("master_log", "client_log"):
        log = getattr(stack, name, None)
        if isinstance(log, Path) and log.exists():
            text = log.read_text(errors="replace")[-LOG_TAIL:]
            sections.append((name.replace("_", " "), f"{log}:\n{text}"))
    return sections


def pytest_sessionfinish(session, exitstatus):
    prefork.close_fork_server()  # this worker's (tests.prefork), if it started one


def pytest_collection_modifyitems(config, items):
    def rank(item) -> int:
        path = item.nodeid
        return next((i for i, prefix in enumerate(LONG_FIRST) if path.startswith(prefix)), 99)

    items.sort(key=rank)  # stable: the order within each group is kept
