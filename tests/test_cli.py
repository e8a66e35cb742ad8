"""The `rawp` console command: every subcommand answers --help, run as a real process."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rawp_app.cli import COMMANDS
from tests import prefork


def rawp(*args: str) -> subprocess.CompletedProcess:
    return prefork.run(args)  # `python -m rawp_app.cli ARGS`, the imports done (tests/prefork.py)


def test_top_level_help_lists_every_command():
    result = rawp("--help")
    assert result.returncode == 0, result.stderr
    for name in COMMANDS:
        assert name in result.stdout


@pytest.mark.parametrize("command", [*COMMANDS, "client pair"])
def test_subcommand_help(command):
    result = rawp(*command.split(), "--help")
    assert result.returncode == 0, result.stderr
    assert f"usage: rawp {command}" in result.stdout
    assert "--" in result.stdout  # it documents at least one option


def test_unknown_command_is_a_clear_error():
    result = rawp("frobnicate")
    assert result.returncode == 2
    assert "invalid choice" in result.stderr
    assert "Traceback" not in result.stderr


STATE_DIR_COMMANDS = {
    "client": ["client", "--dev", "--port", "0"],
    "client pair": ["client", "pair", "http://127.0.0.1:9/v1/auth/pair?token=t", "--dev"],
    "master": ["master", "--dev", "--port", "0"],
    "gateway": ["gateway"],
    "up": ["up"],
}


@pytest.fixture(params=["under a file", "on sysfs"])
def bad_state_dir(request, tmp_path):
    """A state directory root cannot create or write in (chmod does not stop root)."""
    if request.param == "under a file":
        (tmp_path / "a-file").write_text("")
        return tmp_path / "a-file" / "state", "Not a directory"
    return Path("/sys/rawp-test-state"), "Operation not permitted"


@pytest.mark.parametrize("command", list(STATE_DIR_COMMANDS))
def test_an_unusable_state_dir_is_one_line_and_a_non_zero_exit(command, bad_state_dir, tmp_path):
    state, cause = bad_state_dir
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "rawp_app.cli",
            *STATE_DIR_COMMANDS[command],
            "--state-dir",
            str(state),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={**os.environ, "RAWP_EDGE_SECRET": "s" * 40},
        stdin=subprocess.DEVNULL,
    )
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    name = command.split()[0]
    assert output.splitlines() == [f"rawp {name}: state directory {state} cannot be used: {cause}"]
    assert not state.exists()
