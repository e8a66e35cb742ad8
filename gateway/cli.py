"""`rawp gateway`: run the chat bot for Discord, Slack or the console."""

from __future__ import annotations

import argparse
import os

from rawp.cli import not_ready


def configure(parser: argparse.ArgumentParser) -> None:
    env = os.environ.get
    parser.add_argument(
        "--master-url",
        default=env("RAWP_MASTER_URL", "http://127.0.0.1:8700"),
        help="base URL of the master's Edge API (RAWP_MASTER_URL)",
    )
    parser.add_argument(
        "--platform",
        choices=("discord", "slack", "console"),
        default=env("RAWP_PLATFORM"),
        help="chat platform; default: the one whose token is configured",
    )
    parser.set_defaults(handler=not_ready("the chat gateway"))
