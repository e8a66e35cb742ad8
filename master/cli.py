"""`rawp master`: serve the master's HTTP API, or print a pairing URL."""

from __future__ import annotations

import argparse
import os

from rawp.cli import not_ready


def configure(parser: argparse.ArgumentParser) -> None:
    env = os.environ.get
    parser.add_argument(
        "--host",
        default=env("RAWP_MASTER_HOST", "127.0.0.1"),
        help="address to listen on (RAWP_MASTER_HOST, default 127.0.0.1)",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=int(env("RAWP_MASTER_PORT", "8700")),
        help="port to listen on (RAWP_MASTER_PORT, default 8700)",
    )
    parser.add_argument(
        "--database-url",
        default=env("RAWP_DATABASE_URL"),
        help="SQLAlchemy URL (RAWP_DATABASE_URL); default: SQLite in the state dir",
    )
    parser.add_argument(
        "--dev",
        action="store_true",
        default=env("RAWP_DEV") == "1",
        help="development mode: allow http:// and loopback client addresses",
    )
    parser.set_defaults(handler=not_ready("the master server"))
