"""The `rawp` console command.

Each subcommand lives with the package that implements it and is loaded by module name only
when the parser is built, so this module stays pure (architecture: `rawp` imports none of the
packages above it). A command module keeps its top-level imports light (servers are imported
inside the handler) and provides
`configure(parser: argparse.ArgumentParser) -> None`, which adds its options and sets
`handler=callable(args) -> int` as a default.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from rawp import __version__, logs
from rawp.settings import CommandSettings, SettingError, add_flags, load, setting

# name → (module, one-line summary). The order is the order of `rawp --help`.
COMMANDS: dict[str, tuple[str, str]] = {
    "up": (
        "adapters.up",
        "run master, client and gateway in one process on loopback (first run, demos)",
    ),
    "master": ("master.cli", "run the master server: pairing, config scopes, Edge API, relay"),
    "client": ("client.cli", "run the local client on this machine, or pair it with a master"),
    "gateway": ("gateway.cli", "run the chat gateway that brings sessions into Discord or Slack"),
    "demo-agent": ("client.demo_agent", "the deterministic demo agent (a jsonl script agent)"),
    "doctor": ("adapters.doctor", "check a deployment: master, TLS, secrets, platforms, agents"),
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


class CommonOptions(CommandSettings):
    """Settings every `rawp` command takes (rawp.settings; the table in
    docs/operations-master.md, Logs)."""

    log_format: Literal["text", "json"] = setting(
        "text",
        env="RAWP_LOG_FORMAT",
        flag="--log-format",
        help="log lines: text, or json: one JSON object per line with request_id and "
        "session_id where one applies; every rawp command takes it",
    )


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


def _load_dotenv() -> None:
    """Read `.env` from the WORKING DIRECTORY (not searched for upward, nor next to the
    installed package) into the environment; real environment variables win (rawp.settings
    rule 1). Agents started by the client inherit the environment, so an API key kept in
    `.env` reaches them as before."""
    from dotenv import load_dotenv

    load_dotenv(Path.cwd() / ".env", override=False)


def main(argv: Sequence[str] | None = None) -> int:
    _load_dotenv()
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 0 if args.command is None else 2
    logs.hide_environment(os.environ)  # .env included: read above
    try:
        logs.configure(load(CommonOptions, args).log_format)
        return int(handler(args) or 0)
    except KeyboardInterrupt:
        return 130
    except (CommandError, SettingError) as exc:
        # A mistake the user can fix: say what it is, without a stack trace.
        print(f"rawp {args.command}: {exc}", file=sys.stderr)
        return 2


class CommandError(Exception):
    """Raised by a handler for a problem the user can fix (bad option, missing file…)."""


def writable_directory(path: Path, what: str = "state directory") -> Path:
    """Create `path` (mode 0700) if needed and prove a file can be written in it.

    Called by every command before it starts anything (issue 14 §7): a state directory that
    cannot be created, is read-only or full is one line naming the path and the cause, and a
    non-zero exit — never a traceback, and never after a server said it is listening.
    """
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, probe = tempfile.mkstemp(dir=path, prefix=".rawp-write-test-")
        try:
            os.write(fd, b"rawp")  # a full disk refuses the data, not always the name
            os.fsync(fd)
        finally:
            os.close(fd)
            os.unlink(probe)
    except OSError as exc:
        cause = exc.strerror or type(exc).__name__
        if exc.filename and Path(exc.filename) in path.parents:  # where creating it failed
            cause += f" (at {exc.filename})"
        raise CommandError(f"{what} {path} cannot be used: {cause}") from None
    return path


if __name__ == "__main__":  # pragma: no cover
    # Under `python -m rawp.cli` this file is `__main__`, while command modules import
    # `rawp.cli`: run that module's main so the CommandError they raise is the one it catches.
    from rawp.cli import main as imported_main

    sys.exit(imported_main())
