"""The `rawp` console command: every subcommand answers --help, run as a real process."""

import subprocess
import sys

import pytest

from rawp.cli import COMMANDS


def rawp(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rawp.cli", *args], capture_output=True, text=True, timeout=60
    )


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
