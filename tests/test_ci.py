"""CI runs every test that needs PostgreSQL or Redis (issue 28 §6): .ci/run starts Redis the
way it starts PostgreSQL (tests/support.py `missing_service`: under CI=true a service that does
not answer fails the test instead of skipping it), and calls exactly the README's command."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.support import ROOT, free_port

# One Redis test and one PostgreSQL test, pointed at ports where nothing answers.
PROBES = [
    "tests/gateway/test_platform_budget.py::test_a_429_blocks_the_route_for_every_replica",
    "tests/gateway/test_conversations_store.py::test_a_binding_survives_reopening_the_store",
]


def run_probes(ci: str) -> subprocess.CompletedProcess:
    dead = free_port()
    env = {
        **os.environ,
        "CI": ci,
        "RAWP_TEST_REDIS_URL": f"redis://127.0.0.1:{dead}/0",
        "RAWP_TEST_POSTGRES_URL": f"postgresql://postgres@127.0.0.1:{dead}/test",
    }
    command = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-n", "0", "-s", "-rA", *PROBES]
    return subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def test_under_ci_a_missing_service_is_an_error_not_a_skip():
    done = run_probes("true")
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    assert "skipped" not in out.splitlines()[-1], out
    assert out.count("under CI (CI=true) a missing service is an error") >= 2, out
    assert "Redis at redis://127.0.0.1:" in out and "PostgreSQL at postgresql://" in out


def test_elsewhere_a_missing_service_is_skipped_with_the_reason():
    done = run_probes("")
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "failed" not in out.splitlines()[-1] and "error" not in out.splitlines()[-1], out
    assert "skipping: Redis at redis://127.0.0.1:" in out
    assert "skipping: PostgreSQL at postgresql://" in out


def test_ci_starts_redis_where_none_answers():
    port = free_port()
    env = {**os.environ, "REDIS_PORT": str(port)}
    started = subprocess.run(
        [str(ROOT / ".ci" / "start-redis")], env=env, capture_output=True, text=True, timeout=120
    )
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        assert "starting Redis on 127.0.0.1:" in started.stdout
        ping = subprocess.run(
            ["redis-cli", "-p", str(port), "ping"], capture_output=True, text=True, timeout=10
        )
        assert ping.stdout.strip() == "PONG"
        again = subprocess.run(  # one that answers is left as it is
            [str(ROOT / ".ci" / "start-redis")], env=env, capture_output=True, text=True
        )
        assert again.returncode == 0 and "starting" not in again.stdout
    finally:
        subprocess.run(["redis-cli", "-p", str(port), "shutdown", "nosave"], capture_output=True)


def test_ci_run_starts_the_services_then_runs_the_readme_command():
    script = (ROOT / ".ci" / "run").read_text().splitlines()
    readme = (ROOT / "README.md").read_text()
    command = script[-1]
    assert command in readme  # exactly the README's test command, last
    assert 'export CI="${CI:-true}"' in script
    assert script.index(".ci/start-redis") < len(script) - 1
