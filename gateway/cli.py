"""`rawp gateway`: run the chat bot for Discord, Slack or the console, and the web edge.

The platforms live in `adapters/` and their wiring in `rawp_app/`, above this package
(tests/test_layout.py: gateway imports neither). So the handler loads the wiring module
`rawp_app.launch` by name at run time, the one by-name load against the direction that the layout
test names; nothing here depends on a platform.
Its settings are `gateway.settings.GatewayOptions`; the edge service credential is read from the
environment only (`RAWP_EDGE_SECRET`), so it never shows in a process list.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from runtime.cli import CommandError, writable_directory
from runtime.settings import add_flags, environment_only, load
from runtime.tasks import exit_status

WIRING_MODULE = "rawp_app.launch"


def configure(parser: argparse.ArgumentParser) -> None:
    from gateway.settings import CONSOLE_OPTIONS, GatewayOptions

    parser.epilog = environment_only(GatewayOptions)
    names = tuple(GatewayOptions.model_fields)
    add_flags(parser, GatewayOptions, only=tuple(n for n in names if n not in CONSOLE_OPTIONS))
    add_flags(parser.add_argument_group("console platform"), GatewayOptions, only=CONSOLE_OPTIONS)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import asyncio
    import logging

    from gateway.settings import GatewayOptions

    options = load(GatewayOptions, args)
    if options.edge_secret is None:
        raise CommandError(
            "set RAWP_EDGE_SECRET to the master's edge service credential "
            "(the same value the master was started with)"
        )
    launch = importlib.import_module(WIRING_MODULE)
    try:
        platforms = launch.choose_platforms(options.platform)
    except launch.LaunchError as exc:
        raise CommandError(str(exc)) from None
    if "console" in platforms:
        # The console is the chat: only warnings go to stderr, the transcript to stdout.
        logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    else:
        logging.basicConfig(
            level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s"
        )
    config = _config(launch, options, platforms)
    announce = None
    if options.web_login_for and "web" in platforms:

        async def announce(web_edge) -> None:  # stderr, like every other line of the gateway
            link = await web_edge.link_for(options.web_login_for)
            print(f"rawp gateway: web: {link}", file=sys.stderr, flush=True)

    try:
        # Non-zero when a critical task died (runtime.tasks rule 4).
        return exit_status(asyncio.run(launch.run_gateway(config, on_web=announce)))
    except launch.LaunchError as exc:
        raise CommandError(str(exc)) from None
    except KeyboardInterrupt:
        return 130


def _config(launch, options, platforms: tuple[str, ...]):
    """The wiring's `GatewayConfig` from the loaded settings."""
    from gateway.settings import GatewayOptions, parse_address, voice_config

    return launch.GatewayConfig(
        master_url=options.master_url,
        edge_secret=options.edge_secret.get_secret_value(),
        database=writable_directory(options.state_dir) / "conversations.sqlite3",
        platforms=platforms,
        agents=options.agents or GatewayOptions().agents,
        workspace=options.workspace,
        show_thinking=options.show_thinking,
        approval_timeout_s=options.approval_timeout,
        unredacted_nodes=options.unredacted_nodes,
        console_user=options.console_user,
        node=options.node,
        agent=options.agent,
        usage_footer=options.usage_footer,
        metrics_address=parse_address(options.metrics_address) if options.metrics_address else None,
        metrics_token=_plain(options.metrics_token),
        database_url=_plain(options.database_url),
        redis_url=_plain(options.redis_url),
        redis_prefix=options.redis_prefix,
        platform_limits=options.platform_limits,
        web=launch.WebConfig(options.web_host, options.web_port, options.web_public_url),
        voice=voice_config(options),
    )


def _plain(secret) -> str | None:
    return secret.get_secret_value() if secret is not None else None
