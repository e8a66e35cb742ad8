"""The `rawp` console command: the table of subcommands, one per tier or tool.

Each subcommand lives with the package that implements it and is loaded by module name when
the parser is built (a command module imports its server inside the handler). A composition root
(rawp_app/ imports every tier; tests/test_layout.py reads these names as imports). What every
command shares — common options, `.env`, logging, `CommandError` — is `runtime.cli`.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from rawp import __version__
from runtime.cli import CommonOptions, load_dotenv, run
from runtime.settings import add_flags

# name → (module, one-line summary). The order is the order of `rawp --help`.
COMMANDS: dict[str, tuple[str, str]] = {
    "up": (
        "rawp_app.up",
        "run master, client and gateway in one process on loopback (first run, demos)",
    ),
    "master": ("master.cli", "run the master server: pairing, config scopes, Edge API, relay"),
    "client": ("client.cli", "run the local client on this machine, or pair it with a master"),
    "gateway": ("gateway.cli", "run the chat gateway that brings sessions into Discord or Slack"),
    "demo-agent": ("client.demo_agent", "the deterministic demo agent (a jsonl script agent)"),
    "doctor": ("rawp_app.doctor", "check a deployment: master, TLS, secrets, platforms, agents"),
}

DESCRIPTION = """\
RAWP drives coding agents on your own machine from a chat app.

  rawp up                      try everything on one machine (console chat, demo agent)
  rawp master                  the master server that edges and clients talk to
  rawp client pair <url>       pair this machine with a master, then `rawp client` to serve
  rawp gateway                 the Discord / Slack bot
  rawp doctor                  check a deployment: each line ✅ or ❌ with the fix

Configuration comes from flags, RAWP_* / DISCORD_* / SLACK_* environment variables and .env.
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rawp",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"rawp {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module_name, summary) in COMMANDS.items():
        command = sub.add_parser(
            name,
            help=summary,
            description=summary[0].upper() + summary[1:] + ".",
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        importlib.import_module(module_name).configure(command)
        add_flags(command, CommonOptions)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    load_dotenv()
    return run(build_parser(), argv)


if __name__ == "__main__":  # pragma: no cover
    # Under `python -m rawp_app.cli` this file is `__main__`; run the imported module's `main`,
    # so the process is the same one `rawp` runs (its command table, its parser).
    from rawp_app.cli import main as imported_main

    sys.exit(imported_main())
