"""`rawp doctor`: check a deployment as an operator would, before asking for help.

One line per check, ✅ or ❌ with the fix, and exit 1 when any ❌ (0 when all pass):

- the master: reachable and its version, its TLS certificate (https), the edge secret accepted
  (rawp_app/doctor/master_checks.py);
- Discord and Slack, when their bot tokens are set, at the configured endpoints
  (rawp_app/doctor/platform_checks.py);
- the database and Redis, when `RAWP_DATABASE_URL` / `RAWP_REDIS_URL` are set;
- this machine's agents (client/agents_check.py): each configured agent's program is found.

The agents check belongs to the client: like `rawp_app.cli` with its commands, it is loaded by
module name when the command runs, so building the `rawp` parser imports no client module.
Checks run concurrently; each has its own timeout, so a dead endpoint costs seconds, not minutes.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from rawp_app.doctor.findings import Finding

AGENTS_CHECK_MODULE = "client.agents_check"


def configure(parser: argparse.ArgumentParser) -> None:
    env = os.environ.get
    parser.add_argument(
        "--master-url",
        default=env("RAWP_MASTER_URL", "http://127.0.0.1:8700"),
        help="base URL the gateway reaches the master at (RAWP_MASTER_URL)",
    )
    parser.add_argument(
        "--agents-file",
        default=env("RAWP_AGENTS_FILE") or None,
        help="the client's agents file (RAWP_AGENTS_FILE); default: the demo agent and the "
        "known agent CLIs found on PATH",
    )
    parser.add_argument(
        "--up",
        metavar="STATE_DIR",
        nargs="?",
        const=Path(".rawp"),
        type=Path,
        help="check the `rawp up` whose state dir this is (default .rawp, up's own default): "
        "its master and edge secret come from STATE_DIR/up.json",
    )
    parser.add_argument(
        "--no-agents",
        action="store_true",
        help="skip the agents check (on a server that runs no client)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    agents_file = None if args.no_agents else (args.agents_file or "")
    master_url, env = args.master_url, os.environ
    if args.up is not None:
        try:
            master_url, env = of_up(args.up, env)
        except UpNotFound as exc:
            print(Finding(False, str(exc), "run `rawp up` first, or pass its --state-dir").line())
            return 1
    findings = asyncio.run(diagnose(master_url, env, agents_file))
    for finding in findings:
        print(finding.line())
    failed = sum(not f.ok for f in findings)
    print(f"{len(findings) - failed} passed, {failed} failed" if failed else "all checks passed")
    sys.stdout.flush()
    return 1 if failed else 0


class UpNotFound(Exception):
    """No running-or-last `rawp up` is described in the state dir given."""


def of_up(state_dir: Path, env: Mapping[str, str]) -> tuple[str, dict[str, str]]:
    """The master URL and environment to check a `rawp up` by: its loopback master and the
    edge secret it keeps in up.json (rawp_app.up.save_run)."""
    try:
        run = json.loads((state_dir / "up.json").read_text())
        port, secret = int(run["master_port"]), str(run["edge_secret"])
    except (OSError, ValueError, KeyError, TypeError):
        raise UpNotFound(f"no `rawp up` state in {state_dir} (its up.json)") from None
    return f"http://127.0.0.1:{port}", {**env, "RAWP_EDGE_SECRET": secret}


async def diagnose(
    master_url: str, env: Mapping[str, str], agents_file: str | None
) -> list[Finding]:
    """Every check, in a fixed order; `agents_file` None skips the agents, "" means none set."""
    from rawp_app.doctor import master_checks, platform_checks

    checks = [master_checks.check_master(master_url, env.get("RAWP_EDGE_SECRET", ""))]
    if env.get("DISCORD_BOT_TOKEN"):
        checks.append(platform_checks.check_discord(env))
    if env.get("SLACK_BOT_TOKEN"):
        checks.append(platform_checks.check_slack(env))
    if env.get("RAWP_DATABASE_URL"):
        checks.append(_one(master_checks.check_database(env["RAWP_DATABASE_URL"])))
    if env.get("RAWP_REDIS_URL"):
        checks.append(_one(master_checks.check_redis(env["RAWP_REDIS_URL"])))
    if agents_file is not None:
        checks.append(asyncio.to_thread(_agents, agents_file))
    results = await asyncio.gather(*checks)
    return [finding for found in results for finding in found]


async def _one(check) -> list[Finding]:
    return [await check]


def _agents(agents_file: str) -> list[Finding]:
    module = importlib.import_module(AGENTS_CHECK_MODULE)
    path = Path(agents_file).expanduser() if agents_file else None
    return [Finding(ok, what, fix) for ok, what, fix in module.check_agents(path)]
