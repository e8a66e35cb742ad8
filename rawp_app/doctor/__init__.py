"""`rawp doctor`: check a deployment as an operator would, before asking for help.

One line per check, ✅ or ❌ with the fix, and exit 1 when any ❌ (0 when all pass):

- the master: reachable and its version, its TLS certificate (https), the edge secret accepted
  (rawp_app/doctor/master_checks.py);
- Discord and Slack, when their bot tokens are set, at the configured endpoints
  (rawp_app/doctor/platform_checks.py);
- the database and Redis, when `RAWP_DATABASE_URL` / `RAWP_REDIS_URL` are set;

What it checks with is its own settings model (rawp_app/doctor/settings.py), whose variables are
the tiers' own declarations; the platforms' tokens are read as their adapters read them.
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
from typing import TYPE_CHECKING

from rawp_app.doctor.findings import Finding
from runtime.settings import add_flags, load, plain, settings_of

if TYPE_CHECKING:
    from rawp_app.doctor.settings import DoctorSettings

AGENTS_CHECK_MODULE = "client.agents_check"


def configure(parser: argparse.ArgumentParser) -> None:
    from rawp_app.doctor.settings import DoctorSettings

    add_flags(parser, DoctorSettings, only=FLAGS)
    others = [doc.env for doc in settings_of(DoctorSettings) if doc.name not in FLAGS]
    parser.epilog = f"Read from the environment only: {', '.join(others)}."
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


FLAGS = ("master_url", "agents_file")  # the rest are read from the environment only


def run(args: argparse.Namespace) -> int:
    from rawp_app.doctor.settings import DoctorSettings

    settings = load(DoctorSettings, args)
    agents_file = None if args.no_agents else str(settings.agents_file or "")
    if args.up is not None:
        try:
            settings = of_up(args.up, settings)
        except UpNotFound as exc:
            print(Finding(False, str(exc), "run `rawp up` first, or pass its --state-dir").line())
            return 1
    findings = asyncio.run(diagnose(settings, os.environ, agents_file))
    for finding in findings:
        print(finding.line())
    failed = sum(not f.ok for f in findings)
    print(f"{len(findings) - failed} passed, {failed} failed" if failed else "all checks passed")
    sys.stdout.flush()
    return 1 if failed else 0


class UpNotFound(Exception):
    """No running-or-last `rawp up` is described in the state dir given."""


def of_up(state_dir: Path, settings: DoctorSettings) -> DoctorSettings:
    """`settings` for checking a `rawp up`: its loopback master and the edge secret it keeps in
    up.json (rawp_app.up.save_run)."""
    try:
        run = json.loads((state_dir / "up.json").read_text())
        port, secret = int(run["master_port"]), str(run["edge_secret"])
    except (OSError, ValueError, KeyError, TypeError):
        raise UpNotFound(f"no `rawp up` state in {state_dir} (its up.json)") from None
    given = {**dict(settings), "master_url": f"http://127.0.0.1:{port}", "edge_secret": secret}
    return type(settings)(**given)


async def diagnose(
    settings: DoctorSettings, env: Mapping[str, str], agents_file: str | None
) -> list[Finding]:
    """Every check, in a fixed order; `agents_file` None skips the agents, "" means none set.
    `env` holds the platforms' own variables (DISCORD_*, SLACK_*)."""
    from rawp_app.doctor import master_checks, platform_checks

    secret = plain(settings.edge_secret) or ""
    checks = [master_checks.check_master(settings.master_url, secret)]
    if env.get("DISCORD_BOT_TOKEN"):
        checks.append(platform_checks.check_discord(env))
    if env.get("SLACK_BOT_TOKEN"):
        checks.append(platform_checks.check_slack(env))
    if settings.database_url is not None:
        checks.append(_one(master_checks.check_database(plain(settings.database_url))))
    if settings.redis_url is not None:
        checks.append(_one(master_checks.check_redis(plain(settings.redis_url))))
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
