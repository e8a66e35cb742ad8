"""`rawp master`: serve the master's HTTP API, print a pairing URL, or list the approval audit.

Imports of the server stack happen inside the handlers so that `rawp --help` stays fast.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from rawp.cli import CommandError, writable_directory


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
        default=env("RAWP_DATABASE_URL") or None,
        help="SQLAlchemy URL (RAWP_DATABASE_URL); default: SQLite in the state dir",
    )
    parser.add_argument(
        "--dev",
        action="store_true",
        default=env("RAWP_DEV") == "1",
        help="development mode: allow http:// and loopback client addresses (RAWP_DEV=1)",
    )
    parser.add_argument(
        "--state-dir",
        type=Path,
        default=Path(env("RAWP_MASTER_STATE_DIR") or ".rawp"),
        help="where the signing key and the SQLite database live "
        "(RAWP_MASTER_STATE_DIR, default .rawp)",
    )
    parser.add_argument(
        "--tls-cert",
        type=Path,
        default=env("RAWP_MASTER_TLS_CERT") or None,
        help="PEM certificate chain to serve HTTPS with (RAWP_MASTER_TLS_CERT)",
    )
    parser.add_argument(
        "--tls-key",
        type=Path,
        default=env("RAWP_MASTER_TLS_KEY") or None,
        help="PEM private key of the certificate (RAWP_MASTER_TLS_KEY)",
    )
    parser.add_argument(
        "--public-url",
        default=env("RAWP_MASTER_PUBLIC_URL") or None,
        help="base URL clients reach this master at, used in pairing URLs "
        "(RAWP_MASTER_PUBLIC_URL; default from host, port and TLS)",
    )
    parser.add_argument(
        "--node-rate-limit",
        default=env("RAWP_MASTER_NODE_RATE_LIMIT", "20/s"),
        help="requests each node token may make, e.g. 20/s (RAWP_MASTER_NODE_RATE_LIMIT)",
    )
    parser.add_argument(
        "--auth-rate-limit",
        default=env("RAWP_MASTER_AUTH_RATE_LIMIT", "10/min"),
        help="pair/refresh requests per remote address, e.g. 10/min (RAWP_MASTER_AUTH_RATE_LIMIT)",
    )
    parser.add_argument(
        "--access-token-ttl",
        type=int,
        default=int(env("RAWP_MASTER_ACCESS_TOKEN_TTL", "900")),
        help="lifetime of node access tokens in seconds (RAWP_MASTER_ACCESS_TOKEN_TTL)",
    )
    parser.add_argument(
        "--redis-url",
        default=env("RAWP_REDIS_URL") or None,
        help="Redis shared by master replicas, e.g. redis://127.0.0.1:6379/0 (RAWP_REDIS_URL); "
        "default: none, a single process (docs/scale-out.md)",
    )
    parser.add_argument(
        "--redis-prefix",
        default=env("RAWP_REDIS_PREFIX", "rawp:"),
        help="start of every Redis key the master writes (RAWP_REDIS_PREFIX, default rawp:)",
    )
    _edge_options(parser)
    sub = parser.add_subparsers(dest="master_command", metavar="SUBCOMMAND")
    pairing = sub.add_parser(
        "pairing-url", help="print a pairing URL (valid 15 minutes) for a user, then exit"
    )
    pairing.add_argument("--user", required=True, help="owner of the node, e.g. local:me")
    pairing.set_defaults(handler=print_pairing_url)
    audit = sub.add_parser(
        "audit", help="list approval answers, refusals and expiries (issue 15 §4), then exit"
    )
    audit.add_argument("--user", help="only this owner's records, e.g. discord:123")
    audit.add_argument("--node", help="only records of this node id")
    audit.add_argument("--since", help="only records since this ISO 8601 time or age (12h, 7d)")
    audit.add_argument("--limit", type=int, default=100, help="at most this many (default 100)")
    audit.add_argument("--json", action="store_true", help='print {"records": [...]} as JSON')
    audit.set_defaults(handler=print_audit)
    parser.set_defaults(handler=serve)


def _edge_options(parser: argparse.ArgumentParser) -> None:
    """The Edge API's options (docs/edge-api.md). The edge secret is read from the environment
    only (RAWP_EDGE_SECRET), so it never shows in a process list."""
    env = os.environ.get
    edge = parser.add_argument_group("Edge API (RAWP §9)")
    edge.add_argument(
        "--edge-token-ttl",
        type=int,
        default=int(env("RAWP_EDGE_TOKEN_TTL", "900")),
        help="lifetime of edge user tokens in seconds (RAWP_EDGE_TOKEN_TTL)",
    )
    edge.add_argument(
        "--edge-oidc-issuer",
        default=env("RAWP_EDGE_OIDC_ISSUER") or None,
        help="accept user JWTs from this OIDC issuer (RAWP_EDGE_OIDC_ISSUER)",
    )
    edge.add_argument(
        "--edge-oidc-jwks-url",
        default=env("RAWP_EDGE_OIDC_JWKS_URL") or None,
        help="the issuer's JWKS URL (RAWP_EDGE_OIDC_JWKS_URL)",
    )
    edge.add_argument(
        "--edge-oidc-audience",
        default=env("RAWP_EDGE_OIDC_AUDIENCE") or None,
        help="the audience the issuer's tokens must name (RAWP_EDGE_OIDC_AUDIENCE)",
    )
    edge.add_argument(
        "--edge-deny-tools",
        default=env("RAWP_EDGE_DENY_TOOLS", "*"),
        help="comma-separated tool_overrides edges may not ask for; * = all "
        "(RAWP_EDGE_DENY_TOOLS, default *)",
    )
    edge.add_argument(
        "--edge-deny-commands",
        default=env("RAWP_EDGE_DENY_COMMANDS", ""),
        help="comma-separated commands edges may not send, in any input_type "
        "(RAWP_EDGE_DENY_COMMANDS)",
    )
    edge.add_argument(
        "--lease-seconds",
        type=float,
        default=float(env("RAWP_LEASE_SECONDS", "5")),
        help="with several replicas: a session's lease outlives its holder's last renewal "
        "this long (RAWP_LEASE_SECONDS, default 5)",
    )
    edge.add_argument(
        "--takeover-sweep-seconds",
        type=float,
        default=float(env("RAWP_TAKEOVER_SWEEP_SECONDS", "2")),
        help="with several replicas: how often each looks for sessions nobody holds "
        "(RAWP_TAKEOVER_SWEEP_SECONDS, default 2)",
    )
    edge.add_argument(
        "--delivery-seconds",
        type=float,
        default=float(env("RAWP_DELIVERY_SECONDS", "5")),
        help="how long an edge frame may wait to reach the client before the edge is told "
        "CLIENT_UNAVAILABLE (RAWP_DELIVERY_SECONDS, default 5)",
    )
    edge.add_argument(
        "--edge-queue-bytes",
        type=int,
        default=int(env("RAWP_EDGE_QUEUE_BYTES", str(16 * 1024 * 1024))),
        help="backlog per edge socket before a slow edge is disconnected, in bytes of frame "
        "text (RAWP_EDGE_QUEUE_BYTES, default 16 MiB)",
    )
    edge.add_argument(
        "--budgets",
        type=Path,
        default=env("RAWP_BUDGETS_FILE") or None,
        help="TOML file of spending budgets per user and node, read at start "
        "(RAWP_BUDGETS_FILE; default: none, nothing is limited; docs/operations-master.md)",
    )


def _names(text: str) -> tuple[str, ...]:
    return tuple(name.strip() for name in text.split(",") if name.strip())


def budgets_from(args: argparse.Namespace):
    """The --budgets file's rules; a file it cannot use stops the start with one line."""
    from master.services.budget_rules import BudgetFileError, BudgetRules, load_budgets

    path = getattr(args, "budgets", None)
    if path is None:
        return BudgetRules()
    try:
        return load_budgets(Path(path))
    except BudgetFileError as exc:
        raise CommandError(str(exc)) from None


def edge_settings_from(args: argparse.Namespace):
    from master.settings import EdgeSettings

    oidc = (args.edge_oidc_issuer, args.edge_oidc_jwks_url, args.edge_oidc_audience)
    if any(oidc) and not all(oidc):
        raise CommandError(
            "--edge-oidc-issuer, --edge-oidc-jwks-url and --edge-oidc-audience go together"
        )
    if args.edge_token_ttl <= 0 or args.edge_queue_bytes <= 0:
        raise CommandError("--edge-token-ttl and --edge-queue-bytes must be positive")
    if not (0.3 <= args.lease_seconds <= 600) or not (0.1 <= args.takeover_sweep_seconds <= 600):
        raise CommandError(
            "--lease-seconds must be within 0.3–600 and --takeover-sweep-seconds within 0.1–600"
        )
    if not 0.1 <= args.delivery_seconds <= 600:
        raise CommandError("--delivery-seconds must be within 0.1–600")
    return EdgeSettings(
        secret=os.environ.get("RAWP_EDGE_SECRET") or None,
        user_token_ttl=args.edge_token_ttl,
        oidc_issuer=args.edge_oidc_issuer,
        oidc_jwks_url=args.edge_oidc_jwks_url,
        oidc_audience=args.edge_oidc_audience,
        deny_tools=_names(args.edge_deny_tools),
        deny_commands=_names(args.edge_deny_commands),
        queue_bytes=args.edge_queue_bytes,
        lease_seconds=args.lease_seconds,
        takeover_sweep_seconds=args.takeover_sweep_seconds,
        delivery_seconds=args.delivery_seconds,
        budgets=budgets_from(args),
    )


def settings_from(args: argparse.Namespace):
    from master.services.rate_limit import Budget
    from master.settings import Settings

    if bool(args.tls_cert) != bool(args.tls_key):
        raise CommandError("--tls-cert and --tls-key go together")
    for path in (args.tls_cert, args.tls_key):
        if path is not None and not Path(path).is_file():
            raise CommandError(f"no such file: {path}")
    try:
        node_budget = Budget.parse(args.node_rate_limit)
        auth_budget = Budget.parse(args.auth_rate_limit)
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    if args.access_token_ttl <= 0:
        raise CommandError("--access-token-ttl must be a positive number of seconds")
    return Settings(
        state_dir=writable_directory(Path(args.state_dir)),  # before anything starts
        host=args.host,
        port=args.port,
        database_url=args.database_url,
        dev=args.dev,
        tls_cert=Path(args.tls_cert) if args.tls_cert else None,
        tls_key=Path(args.tls_key) if args.tls_key else None,
        public_url=args.public_url,
        access_token_ttl=args.access_token_ttl,
        node_budget=node_budget,
        auth_budget=auth_budget,
        redis_url=args.redis_url,
        redis_prefix=args.redis_prefix,
        metrics_token=os.environ.get("RAWP_METRICS_TOKEN") or None,
        edge=edge_settings_from(args),
    )


def serve(args: argparse.Namespace) -> int:
    import asyncio

    from master.server import run

    settings = settings_from(args)
    asyncio.run(run(settings))
    return 0


def print_pairing_url(args: argparse.Namespace) -> int:
    import asyncio

    from master.server import issue_pairing_url

    settings = settings_from(args)
    user = args.user.strip()
    if not user:
        raise CommandError("--user must name a user, e.g. local:me")
    print(asyncio.run(issue_pairing_url(settings, user)))
    return 0


def print_audit(args: argparse.Namespace) -> int:
    import asyncio

    from master.audit_cli import records, render
    from rawp.clock import SYSTEM_CLOCK

    if not 1 <= args.limit <= 100_000:
        raise CommandError("--limit must be from 1 to 100000")
    settings = settings_from(args)
    found = asyncio.run(
        records(
            settings,
            SYSTEM_CLOCK,
            user=args.user,
            node=args.node,
            since=args.since,
            limit=args.limit,
        )
    )
    print(render(found, args.json))
    return 0
