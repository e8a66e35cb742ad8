"""`rawp up`: master, client and gateway in one process on loopback.

This is the one wiring module allowed to import master, client and gateway together
(tests/test_layout.py names it).
"""

from __future__ import annotations

import argparse
import os

from rawp.cli import not_ready


def configure(parser: argparse.ArgumentParser) -> None:
    env = os.environ.get
    parser.add_argument(
        "--workspace",
        default=env("RAWP_WORKSPACE", "."),
        help="directory the agent works in (default: the current directory)",
    )
    parser.add_argument(
        "--agent",
        default=env("RAWP_AGENT", "demo"),
        help="agent to start, by name from the agents file (default: demo)",
    )
    parser.add_argument(
        "--state-dir",
        default=env("RAWP_STATE_DIR", ".rawp"),
        help="where the SQLite database and keys live (default: .rawp)",
    )
    parser.set_defaults(handler=not_ready("`rawp up`"))
