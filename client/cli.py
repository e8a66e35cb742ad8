"""`rawp client`: serve the client API, or `rawp client pair <url>` to pair with a master."""

from __future__ import annotations

import argparse
import socket

from runtime.cli import CommandError, writable_directory
from runtime.settings import add_flags, environment_only, load


def configure(parser: argparse.ArgumentParser) -> None:
    from client.settings import COMMON, ClientSettings

    parser.epilog = environment_only(ClientSettings)  # RAWP_METRICS_TOKEN
    add_flags(parser, ClientSettings)
    sub = parser.add_subparsers(dest="client_command", metavar="SUBCOMMAND")
    pair = sub.add_parser("pair", help="pair this machine with a master using a pairing URL")
    pair.add_argument("pairing_url", help="the URL the master (or the chat bot) gave you")
    pair.add_argument("--name", help="device name shown to you in chat (default: host name)")
    add_flags(pair, ClientSettings, only=COMMON)  # given after `pair` too
    pair.set_defaults(handler=run_pair)
    unpair = sub.add_parser("unpair", help="leave the master's network (RAWP §3.5)")
    add_flags(unpair, ClientSettings, only=COMMON)
    unpair.set_defaults(handler=run_unpair)
    parser.set_defaults(handler=run_serve)


def build_settings(args: argparse.Namespace):
    """The client's settings from flags over RAWP_* variables (client.settings.ClientSettings)."""
    from client.settings import ClientSettings

    return load(ClientSettings, args)


def run_serve(args: argparse.Namespace) -> int:
    import asyncio
    import logging
    import signal

    from client.agents import AgentsFileError
    from client.app import create_app
    from client.server import CannotListen, serve_client

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    settings = build_settings(args)
    writable_directory(settings.state_dir)
    if settings.tls_cert is None and not settings.dev:
        raise CommandError("serving without TLS needs --dev (K-01); give --tls-cert/--tls-key")
    try:
        app = create_app(settings)
    except AgentsFileError as exc:
        raise CommandError(str(exc)) from None

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        # Which agents this machine offers: without an agents file, the ones found on PATH.
        offered = [a.name for a in app.config["client_services"].agents.values() if a.is_active]
        print(f"rawp client offers the agents: {', '.join(offered) or 'none'}", flush=True)
        await serve_client(
            app,
            settings.host,
            settings.port,
            stop,
            certfile=settings.tls_cert,
            keyfile=settings.tls_key,
            on_listening=lambda: print(f"rawp client listening on {settings.address}", flush=True),
        )
        print("rawp client stopped", flush=True)  # the one line of a clean stop

    try:
        asyncio.run(main())
    except CannotListen as exc:  # one line, not a traceback
        raise CommandError(str(exc)) from None
    return 0


def run_pair(args: argparse.Namespace) -> int:
    import asyncio

    from client.link.auth import ClientAuth
    from client.link.master import MasterLink, MasterLinkError
    from client.state import StateDir

    settings = build_settings(args)
    writable_directory(settings.state_dir)
    if settings.public_address is None and settings.host in ("0.0.0.0", "::"):
        raise CommandError(
            "listening on every address: give --public-address, the URL the "
            "master can reach this machine at"
        )
    name = args.name or socket.gethostname()

    async def pair() -> dict:
        state = StateDir.open(settings.state_dir)
        link = MasterLink(state, settings)
        try:
            client_pair = ClientAuth(state, settings.access_token_ttl).issue()
            return await link.pair(args.pairing_url, name, client_pair)
        finally:
            await link.close()

    try:
        answer = asyncio.run(pair())
    except MasterLinkError as exc:
        raise CommandError(str(exc)) from None
    print(f"paired as {name!r} (node {answer.get('node_id', '?')}); run `rawp client` to serve")
    return 0


def run_unpair(args: argparse.Namespace) -> int:
    import asyncio

    from client.link.master import MasterLink, MasterLinkError
    from client.state import StateDir

    settings = build_settings(args)
    writable_directory(settings.state_dir)

    async def unpair() -> None:
        link = MasterLink(StateDir.open(settings.state_dir), settings)
        try:
            await link.unpair()
        finally:
            await link.close()

    try:
        asyncio.run(unpair())
    except MasterLinkError as exc:
        raise CommandError(str(exc)) from None
    print("unpaired: this machine has left the master's network")
    return 0
