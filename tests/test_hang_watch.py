"""The hang watchdog (tests/hang_watch.py): a test stuck in an async teardown is reported with
the coroutine it waits in, fails alone, and the run goes on to the next test."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from tests.support import ROOT

STUCK = """
import asyncio
import pytest


async def wait_for_ever(event):
    await event.wait()


@pytest.fixture
async def never_closes():
    yield
    await wait_for_ever(asyncio.Event())  # the teardown that never ends


async def test_stuck_in_teardown(never_closes):
    assert True


def test_the_next_one_runs():
    assert True
"""


def test_a_hung_teardown_is_dumped_cancelled_and_the_run_goes_on(tmp_path):
    (tmp_path / "conftest.py").write_text(
        "from tests.conftest import pytest_runtest_makereport, pytest_runtest_protocol\n"
    )
    (tmp_path / "test_stuck.py").write_text(textwrap.dedent(STUCK))
    env = {**os.environ, "RAWP_TEST_HANG_SECONDS": "3", "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "pytest", str(tmp_path), "-p", "no:cacheprovider"]
    command += ["-n", "0", "-o", "asyncio_mode=auto", "--rootdir", str(tmp_path)]
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env=env,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "still running after" in output
    dump = output[output.index("--- unfinished asyncio tasks") :]
    assert "in wait_for_ever" in dump and "in wait" in dump  # down to the awaited Event
    # The stuck test passed its call and errs in its teardown; the next one ran and passed.
    assert "2 passed, 1 error" in output
    assert "stacks of the hang: " in output
