"""`rawp client`: serve the client API, or `rawp client pair <url>` to pair with a master."""

from __future__ import annotations

import argparse
import os

from rawp.cli import not_ready


def configure(parser: argparse.ArgumentParser) -> None:
    env = os.environ.get
    parser.add_argument(
        "--host",
        default=env("RAWP_CLIENT_HOST", "127.0.0.1"),
        help="address to listen on (RAWP_CLIENT_HOST)",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=int(env("RAWP_CLIENT_PORT", "8701")),
        help="port to listen on (RAWP_CLIENT_PORT, default 8701)",
    )
    parser.add_argument(
        "--agents-file",
        default=env("RAWP_AGENTS_FILE"),
        help="TOML file naming the agents this machine may run",
    )
    parser.add_argument(
        "--dev",
        action="store_true",
        default=env("RAWP_DEV") == "1",
        help="development mode: allow http:// and loopback",
    )
    sub = parser.add_subparsers(dest="client_command", metavar="SUBCOMMAND")
    pair = sub.add_parser("pair", help="pair this machine with a master using a pairing URL")
    pair.add_argument("pairing_url", help="the URL the master (or the chat bot) gave you")
    pair.add_argument("--name", help="device name shown to you in chat (default: host name)")
    pair.set_defaults(handler=not_ready("pairing"))
    parser.set_defaults(handler=not_ready("the local client"))
