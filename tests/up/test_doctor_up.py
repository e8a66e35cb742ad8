"""`rawp doctor --up` against a running `rawp up` (issue 17 §3): all ✅ — its master, the edge
secret that run keeps in up.json (mode 0600), the demo agent — and a state dir with no run in
it is one ❌ line with its fix."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

from tests.support import ROOT, Processes

NO_PLATFORMS = {"DISCORD_BOT_TOKEN": "", "SLACK_BOT_TOKEN": "", "RAWP_PLATFORM": ""}


def doctor(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, **NO_PLATFORMS, "RAWP_EDGE_SECRET": "", "RAWP_AGENTS_FILE": ""}
    return subprocess.run(
        [sys.executable, "-m", "rawp_app.cli", "doctor", *args],
        capture_output=True, text=True, timeout=60, env=env, cwd=ROOT,
    )  # fmt: skip


def test_doctor_against_a_running_rawp_up_is_all_green(processes: Processes, tmp_path):
    workspace, state = tmp_path / "project", tmp_path / "state"
    workspace.mkdir()
    proc = processes.rawp(
        "up", "--state-dir", str(state),
        env=NO_PLATFORMS, cwd=workspace,
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    seen = ""
    while "development mode" not in seen:  # said once up.json is written and all serve
        line = proc.stderr.readline().decode()
        assert line, f"rawp up ended early:\n{seen}"
        seen += line
    assert stat.S_IMODE((state / "up.json").stat().st_mode) == 0o600

    result = doctor("--up", str(state))
    lines = result.stdout.splitlines()
    assert result.returncode == 0, result.stdout + result.stderr
    assert [line for line in lines if not line.startswith("✅")] == ["all checks passed"]
    joined = result.stdout
    assert "✅ the master accepts RAWP_EDGE_SECRET" in joined
    assert "✅ agent 'demo'" in joined
    secret = json.loads((state / "up.json").read_text())["edge_secret"]
    assert secret not in joined + result.stderr

    proc.stdin.close()  # end of input ends `rawp up`
    assert proc.wait(timeout=60) == 0
    # The run is over: its master does not answer any more — a ❌ with the fix.
    stopped = doctor("--up", str(state), "--no-agents")
    assert stopped.returncode == 1
    assert (
        "❌ master http://127.0.0.1:" in stopped.stdout
        and "fix: start the master" in stopped.stdout
    )


def test_doctor_up_without_a_run_is_one_red_line(tmp_path):
    result = doctor("--up", str(tmp_path / "nothing-here"))
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        f"❌ no `rawp up` state in {tmp_path / 'nothing-here'} (its up.json) — fix: run "
        "`rawp up` first, or pass its --state-dir"
    ]
