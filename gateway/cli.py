"""`rawp gateway`: run the chat bot for Discord, Slack or the console, and the web edge.

The platforms live in `adapters/` and their wiring in `rawp_app/`, above this package
(tests/test_layout.py: gateway imports neither). So the handler loads the wiring module
`rawp_app.launch` by name at run time, the one by-name load against the direction that the layout
test names; nothing here depends on a platform.
Its settings are `gateway.settings.GatewaySettings`, which `run_gateway` takes as they are; the
edge service credential is read from the environment only (`RAWP_EDGE_SECRET`), so it never
shows in a process list.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from runtime.cli import CommandError, writable_directory
from runtime.settings import add_flags, environment_only, load, settings_of
from runtime.tasks import exit_status

WIRING_MODULE = "rawp_app.launch"


def configure(parser: argparse.ArgumentParser) -> None:
    from gateway.settings import GatewaySettings

    parser.epilog = environment_only(GatewaySettings)
    names = [doc.name for doc in settings_of(GatewaySettings)]
    console = tuple(name for name in names if name.startswith("console."))
    add_flags(parser, GatewaySettings, only=tuple(name for name in names if name not in console))
    add_flags(parser.add_argument_group("console platform"), GatewaySettings, only=console)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import asyncio
    import logging

    from gateway.settings import GatewaySettings

    settings = load(GatewaySettings, args)
    if settings.edge_secret is None:
        raise CommandError(
            "set RAWP_EDGE_SECRET to the master's edge service credential "
            "(the same value the master was started with)"
        )
    launch = importlib.import_module(WIRING_MODULE)
    try:
        platforms = launch.choose_platforms(settings.platform)
    except launch.LaunchError as exc:
        raise CommandError(str(exc)) from None
    if "console" in platforms:
        # The console is the chat: only warnings go to stderr, the transcript to stdout.
        logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    else:
        logging.basicConfig(
            level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s"
        )
    writable_directory(settings.state_dir)  # before anything starts
    announce = None
    if settings.web.login_for and "web" in platforms:

        async def announce(web_edge) -> None:  # stderr, like every other line of the gateway
            link = await web_edge.link_for(settings.web.login_for)
            print(f"rawp gateway: web: {link}", file=sys.stderr, flush=True)

    try:
        # Non-zero when a critical task died (runtime.tasks rule 4).
        return exit_status(asyncio.run(launch.run_gateway(settings, on_web=announce)))
    except launch.LaunchError as exc:
        raise CommandError(str(exc)) from None
    except KeyboardInterrupt:
        return 130
