"""`rawp demo-agent`: a deterministic jsonl script agent for tests and demos."""

from __future__ import annotations

import argparse

from rawp.cli import not_ready


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="*", help="file references passed by the client")
    parser.set_defaults(handler=not_ready("the demo agent"))
