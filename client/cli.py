"""`rawp client`: serve the client API, or `rawp client pair <url>` to pair with a master."""

from __future__ import annotations

import argparse
import os
import socket
from pathlib import Path

from rawp.cli import CommandError, writable_directory


def _env(name: str, default: str | None = None) -> str | None:
    return os.environ.get(name) or default


def configure(parser: argparse.ArgumentParser) -> None:
    env = _env
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
        help="TOML file naming the agents this machine may run (RAWP_AGENTS_FILE); "
        "without one, the demo agent only",
    )
    parser.add_argument(
        "--allow-root",
        action="append",
        dest="allowed_roots",
        help="a directory sessions may work in; repeat for several "
        "(RAWP_ALLOWED_ROOTS, separated by ':'; default: the current directory)",
    )
    parser.add_argument(
        "--default-workspace",
        default=env("RAWP_CLIENT_DEFAULT_WORKSPACE"),
        help="workspace offered when a session names none (RAWP_CLIENT_DEFAULT_WORKSPACE; "
        "default: the first allowed root)",
    )
    parser.add_argument(
        "--tls-cert",
        default=env("RAWP_CLIENT_TLS_CERT"),
        help="PEM certificate: serve https/wss (RAWP_CLIENT_TLS_CERT)",
    )
    parser.add_argument(
        "--tls-key", default=env("RAWP_CLIENT_TLS_KEY"), help="PEM key (RAWP_CLIENT_TLS_KEY)"
    )
    parser.add_argument(
        "--reattach-window",
        type=int,
        default=int(env("RAWP_CLIENT_REATTACH_WINDOW", "300")),
        help="seconds a session survives without its socket; 0 = none (default 300)",
    )
    parser.add_argument(
        "--max-buffer-size",
        type=int,
        default=int(env("RAWP_CLIENT_MAX_BUFFER_SIZE", str(16 * 1024 * 1024))),
        help="bytes of frames kept for replay per session (default 16 MiB)",
    )
    parser.add_argument(
        "--max-frame-size",
        type=int,
        default=int(env("RAWP_CLIENT_MAX_FRAME_SIZE", str(1024 * 1024))),
        help="largest WebSocket frame in bytes, at least 1024 (default 1 MiB)",
    )
    parser.add_argument(
        "--buffer-policy",
        choices=("RING", "DROP"),
        default=env("RAWP_CLIENT_BUFFER_POLICY", "RING"),
        help="when the buffer is full: RING drops the oldest frames, DROP the newest",
    )
    parser.add_argument(
        "--rate-limit",
        type=int,
        default=int(env("RAWP_CLIENT_RATE_LIMIT", "50")),
        help="HTTP requests per second the client accepts from its master (default 50)",
    )
    parser.add_argument(
        "--kill-grace",
        type=float,
        default=float(env("RAWP_CLIENT_KILL_GRACE", "5")),
        help="seconds between SIGTERM and SIGKILL when a session ends (default 5, §5.2)",
    )
    _common(parser, None)
    sub = parser.add_subparsers(dest="client_command", metavar="SUBCOMMAND")
    pair = sub.add_parser("pair", help="pair this machine with a master using a pairing URL")
    pair.add_argument("pairing_url", help="the URL the master (or the chat bot) gave you")
    pair.add_argument("--name", help="device name shown to you in chat (default: host name)")
    _common(pair, argparse.SUPPRESS)
    pair.set_defaults(handler=run_pair)
    unpair = sub.add_parser("unpair", help="leave the master's network (RAWP §3.5)")
    _common(unpair, argparse.SUPPRESS)
    unpair.set_defaults(handler=run_unpair)
    parser.set_defaults(handler=run_serve)


def _common(parser: argparse.ArgumentParser, suppress: object) -> None:
    """Options both `rawp client` and `rawp client pair` take (given after either)."""

    def default(value: object) -> object:
        return suppress if suppress is not None else value

    parser.add_argument(
        "--state-dir",
        default=default(_env("RAWP_CLIENT_STATE_DIR", ".rawp/client")),
        help="where the client keeps its key and credentials (RAWP_CLIENT_STATE_DIR)",
    )
    parser.add_argument(
        "--public-address",
        default=default(_env("RAWP_CLIENT_ADDRESS")),
        help="base URL the master calls, e.g. https://laptop.lan:8701 (RAWP_CLIENT_ADDRESS; "
        "default: scheme://host:port)",
    )
    parser.add_argument(
        "--dev",
        action="store_true",
        default=default(_env("RAWP_DEV") == "1"),
        help="development mode: allow http:// and loopback (RAWP_DEV=1)",
    )


def build_settings(args: argparse.Namespace):
    from client.settings import ClientSettings
    from rawp.config import Limits

    roots = args.allowed_roots or [
        p for p in (_env("RAWP_ALLOWED_ROOTS") or "").split(os.pathsep) if p
    ]
    try:
        limits = Limits(
            rate_limit=args.rate_limit,
            max_frame_size=args.max_frame_size,
            reattach_window=args.reattach_window,
            max_buffer_size=args.max_buffer_size,
            buffer_overflow_policy=args.buffer_policy,
        )
    except ValueError as exc:
        raise CommandError(f"invalid limits: {exc}") from None
    if limits.max_buffer_size < limits.max_frame_size:
        raise CommandError("--max-buffer-size must be at least --max-frame-size")
    agents_file = Path(args.agents_file) if args.agents_file else None
    return ClientSettings(
        state_dir=Path(args.state_dir),
        allowed_roots=[Path(r) for r in roots] or [Path.cwd()],
        host=args.host,
        port=args.port,
        public_address=args.public_address,
        metrics_token=os.environ.get("RAWP_METRICS_TOKEN") or None,
        agents_file=agents_file,
        default_workspace=Path(args.default_workspace) if args.default_workspace else None,
        dev=args.dev,
        certfile=Path(args.tls_cert) if args.tls_cert else None,
        keyfile=Path(args.tls_key) if args.tls_key else None,
        limits=limits,
        kill_grace=args.kill_grace,
    )


def run_serve(args: argparse.Namespace) -> int:
    import asyncio
    import logging
    import signal

    from hypercorn.asyncio import serve
    from hypercorn.config import Config

    from client.agents import AgentsFileError
    from client.app import create_app

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    settings = build_settings(args)
    writable_directory(settings.state_dir)
    if (settings.certfile is None) != (settings.keyfile is None):
        raise CommandError("--tls-cert and --tls-key go together")
    if settings.certfile is None and not settings.dev:
        raise CommandError("serving without TLS needs --dev (K-01); give --tls-cert/--tls-key")
    try:
        app = create_app(settings)
    except AgentsFileError as exc:
        raise CommandError(str(exc)) from None
    config = Config()
    config.bind = [f"{settings.host}:{settings.port}"]
    config.accesslog = None
    config.errorlog = logging.getLogger("hypercorn.error")  # through our handler (rawp.logs)
    if settings.certfile:
        config.certfile, config.keyfile = str(settings.certfile), str(settings.keyfile)

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        print(f"rawp client listening on {settings.address}", flush=True)
        await serve(app, config, shutdown_trigger=stop.wait)

    asyncio.run(main())
    return 0


def run_pair(args: argparse.Namespace) -> int:
    import asyncio

    from client.auth import ClientAuth
    from client.master_link import MasterLink, MasterLinkError
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

    from client.master_link import MasterLink, MasterLinkError
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
