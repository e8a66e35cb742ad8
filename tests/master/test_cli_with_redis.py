"""Every `rawp master` subcommand works with Redis configured (issue 34 §1): in a compose or
replica deployment RAWP_REDIS_URL is always set, and the one-shot commands build the same
services as the server without starting the relay."""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys

from rawp_app.cli import build_parser
from tests.scale.conftest import REDIS_URL, redis_prefix  # noqa: F401 (a fixture)
from tests.support import ROOT

# Each subcommand with the arguments it needs, and a line its output must hold.
SUBCOMMANDS = {
    "pairing-url": (["--user", "console:local"], "/v1/auth/pair?token="),
    "audit": ([], "no approval records"),
}


def _master_subcommands() -> set[str]:
    parser = build_parser()
    master = next(
        action.choices["master"]
        for action in parser._actions
        if isinstance(action, argparse._SubParsersAction)
    )
    return {
        name
        for action in master._actions
        if isinstance(action, argparse._SubParsersAction)
        for name in action.choices
    }


def test_every_subcommand_is_listed_here():
    assert _master_subcommands() == set(SUBCOMMANDS), "add the new subcommand to SUBCOMMANDS"


async def test_every_subcommand_runs_with_redis_configured(tmp_path, redis_prefix):  # noqa: F811
    _, prefix = redis_prefix
    env = {
        "PATH": "/usr/bin:/bin",
        "RAWP_REDIS_URL": REDIS_URL,
        "RAWP_REDIS_PREFIX": prefix,
        "RAWP_MASTER_STATE_DIR": str(tmp_path / "state"),
    }
    for name, (args, expected) in SUBCOMMANDS.items():
        result = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "rawp_app.cli", "master", "--dev", name, *args],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=ROOT,
            env=env,
        )
        assert result.returncode == 0, f"{name}: {result.stderr}"
        assert expected in result.stdout, f"{name}: {result.stdout}"
        assert "Traceback" not in result.stderr, f"{name}: {result.stderr}"
