"""The suite's fork server (tests/prefork.py) must start `rawp` processes that behave as
`python -m rawp_app.cli` ones do: same output and exit status, their own session, the test's
environment and working directory, killable and reaped with the status `subprocess` gives."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from tests import prefork
from tests.support import ROOT, free_port, wait_for_http

BAD = ("master", "--port", "not-a-port")


def test_a_forked_command_says_and_exits_what_a_started_one_does(tmp_path):
    plain = subprocess.run(
        [sys.executable, "-m", "rawp_app.cli", *BAD], capture_output=True, cwd=ROOT, timeout=60
    )
    forked = prefork.fork_server().launch(
        BAD, env=dict(os.environ), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    out, err = forked.communicate(timeout=60)
    assert (forked.returncode, out, err) == (plain.returncode, plain.stdout, plain.stderr)
    assert plain.returncode == 2 and b"not-a-port" in plain.stderr


def test_a_forked_server_has_its_own_session_env_and_cwd_and_dies_by_its_signal(tmp_path):
    port = free_port()
    env = {**os.environ, "RAWP_MASTER_PORT": str(port)}  # the port only through the env
    proc = prefork.fork_server().launch(
        ("master", "--dev", "--state-dir", "state"),  # relative: to the cwd given
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_for_http(f"http://127.0.0.1:{port}/v1/health", timeout=60, proc=proc)
        assert os.getsid(proc.pid) == proc.pid  # a session (and process group) of its own
        assert (tmp_path / "state").is_dir()
        assert proc.poll() is None
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=0.1)
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
    finally:
        proc.kill()
        proc.stdout.close()
