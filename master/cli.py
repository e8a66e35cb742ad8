"""`rawp master`: serve the master's HTTP API, print a pairing URL, or list the approval audit.

Imports of the server stack happen inside the handlers so that `rawp --help` stays fast.
"""

from __future__ import annotations

import argparse

from runtime.cli import CommandError, writable_directory
from runtime.settings import add_flags, environment_only, load
from runtime.tasks import exit_status

# The fields of MasterOptions shown under "Edge API" in --help; the others come first.
EDGE_OPTIONS = (
    "edge_token_ttl",
    "edge_oidc_issuer",
    "edge_oidc_jwks_url",
    "edge_oidc_audience",
    "edge_deny_tools",
    "edge_deny_commands",
    "lease_seconds",
    "takeover_sweep_seconds",
    "delivery_seconds",
    "edge_queue_bytes",
    "budgets",
)


def configure(parser: argparse.ArgumentParser) -> None:
    from master.settings import MasterOptions

    parser.epilog = environment_only(MasterOptions)
    names = tuple(MasterOptions.model_fields)
    add_flags(parser, MasterOptions, only=tuple(n for n in names if n not in EDGE_OPTIONS))
    # The edge secret has no flag (RAWP_EDGE_SECRET only), so it never shows in a process list.
    add_flags(parser.add_argument_group("Edge API (RAWP §9)"), MasterOptions, only=EDGE_OPTIONS)
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


def settings_from(args: argparse.Namespace):
    """The master's settings from flags over RAWP_* variables (master.settings.MasterOptions)."""
    from master.settings import MasterOptions

    options = load(MasterOptions, args)
    for path in (options.tls_cert, options.tls_key):
        if path is not None and not path.is_file():
            raise CommandError(f"no such file: {path}")
    state_dir = writable_directory(options.state_dir)  # before anything starts
    return options.runtime(state_dir, budgets_from(options.budgets))


def budgets_from(path):
    """The budgets file's rules; a file it cannot use stops the start with one line."""
    from master.services.budget_rules import BudgetFileError, BudgetRules, load_budgets

    if path is None:
        return BudgetRules()
    try:
        return load_budgets(path)
    except BudgetFileError as exc:
        raise CommandError(str(exc)) from None


def serve(args: argparse.Namespace) -> int:
    from master.server import StartupFailed, run

    settings = settings_from(args)
    try:
        with_database(settings, run(settings))
    except (OSError, StartupFailed) as exc:  # the address, or the app's start (logged above)
        raise CommandError(str(exc)) from None
    return exit_status(0)  # non-zero when a critical task died (runtime.tasks rule 4)


def with_database(settings, work):
    """`asyncio.run(work)`; a database it cannot use is one line naming it (issue 34 §2)."""
    import asyncio

    from master.storage.db import database_url
    from runtime.database_reach import DatabaseUnreachable, describe

    try:
        return asyncio.run(work)
    except DatabaseUnreachable as exc:
        raise CommandError(str(exc)) from None
    except Exception as exc:
        line = describe(database_url(settings.database_url, settings.state_dir), exc)
        if line is None:
            raise
        raise CommandError(line) from None


def print_pairing_url(args: argparse.Namespace) -> int:
    from master.server import issue_pairing_url

    settings = settings_from(args)
    user = args.user.strip()
    if not user:
        raise CommandError("--user must name a user, e.g. local:me")
    print(with_database(settings, issue_pairing_url(settings, user)))
    return 0


def print_audit(args: argparse.Namespace) -> int:
    from master.audit_cli import records, render
    from rawp.clock import SYSTEM_CLOCK

    if not 1 <= args.limit <= 100_000:
        raise CommandError("--limit must be from 1 to 100000")
    settings = settings_from(args)
    found = with_database(
        settings,
        records(
            settings,
            SYSTEM_CLOCK,
            user=args.user,
            node=args.node,
            since=args.since,
            limit=args.limit,
        ),
    )
    print(render(found, args.json))
    return 0
