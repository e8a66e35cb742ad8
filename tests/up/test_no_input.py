"""`rawp up` and the console gateway with /dev/null for input (`docker run` without `-i`) say
they need input and exit 2, before any server starts — not exit 0 having run no turn. An empty
pipe stays a valid, empty script (tests/up/test_up.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support import free_port


@pytest.mark.parametrize(
    "command",
    [["up"], ["gateway", "--platform", "console"]],
    ids=["up", "gateway-console"],
)
def test_no_input_is_refused_with_the_docker_fix(command, tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "rawp_app.cli", *command, "--state-dir", str(tmp_path / "state")],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, cwd=tmp_path,
        env={**os.environ, "RAWP_EDGE_SECRET": "s" * 40, "DISCORD_BOT_TOKEN": "",
             "SLACK_BOT_TOKEN": "", "RAWP_PLATFORM": "",
             "RAWP_MASTER_URL": f"http://127.0.0.1:{free_port()}"},
    )  # fmt: skip
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    name = command[0]
    assert line.startswith(f"rawp {name}: the console chat reads prompts from standard input")
    assert "`docker run -i" in line
