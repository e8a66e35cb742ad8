"""What every `rawp` command shares, whichever tier it runs (runtime: beneath the tiers).

A command module (`master.cli`, `client.cli`, `gateway.cli`, `rawp_app.up`, …) provides
`configure(parser: argparse.ArgumentParser) -> None`, which adds its options and sets
`handler=callable(args) -> int` as a default; `run` parses, configures logging and calls the
handler. It keeps its top-level imports light (servers are imported inside the handler). The
table of commands, which names every tier, is `rawp_app.cli` (the composition root).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from runtime import logs
from runtime.settings import CommandSettings, SettingError, load, setting


class CommonOptions(CommandSettings):
    """Settings every `rawp` command takes (runtime.settings; the table in
    docs/operations-master.md, Logs)."""

    log_format: Literal["text", "json"] = setting(
        "text",
        env="RAWP_LOG_FORMAT",
        flag="--log-format",
        help="log lines: text, or json: one JSON object per line with request_id and "
        "session_id where one applies; every rawp command takes it",
    )


def load_dotenv() -> None:
    """Read `.env` from the WORKING DIRECTORY (not searched for upward, nor next to the
    installed package) into the environment; real environment variables win (runtime.settings
    rule 1). Agents started by the client inherit the environment, so an API key kept in
    `.env` reaches them as before."""
    from dotenv import load_dotenv as read_dotenv

    read_dotenv(Path.cwd() / ".env", override=False)


def run(parser: argparse.ArgumentParser, argv: Sequence[str] | None = None) -> int:
    """Parse `argv` with `parser` and run the chosen command's handler (`.env` already read)."""
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 0 if args.command is None else 2
    logs.hide_environment(os.environ)  # .env included: read by load_dotenv
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
