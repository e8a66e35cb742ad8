"""`rawp master`: serve the master's HTTP API, print a pairing URL, or list the approval audit.

Imports of the server stack happen inside the handlers so that `rawp --help` stays fast.
"""

from __future__ import annotations

import argparse

from runtime.cli import CommandError, writable_directory
from runtime.settings import add_flags, environment_only, load, settings_of
from runtime.tasks import exit_status


def configure(parser: argparse.ArgumentParser) -> None:
    from master.settings import MasterSettings

    parser.epilog = environment_only(MasterSettings)
    # The settings of the `edge` group are shown under "Edge API" in --help; the others first.
    names = [doc.name for doc in settings_of(MasterSettings)]
    edge = tuple(name for name in names if name.startswith("edge."))
    add_flags(parser, MasterSettings, only=tuple(name for name in names if name not in edge))
    # The edge secret has no flag (RAWP_EDGE_SECRET only), so it never shows in a process list.
    add_flags(parser.add_argument_group("Edge API (RAWP §9)"), MasterSettings, only=edge)
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
    """The master's settings from flags over RAWP_* variables (master.settings.MasterSettings;
    its budgets file is read as it is made: a file it cannot use is one line)."""
    from master.settings import MasterSettings

    settings = load(MasterSettings, args)
    for path in (settings.tls_cert, settings.tls_key):
        if path is not None and not path.is_file():
            raise CommandError(f"no such file: {path}")
    writable_directory(settings.state_dir)  # before anything starts
    return settings


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

    from runtime.database_reach import DatabaseUnreachable, describe

    try:
        return asyncio.run(work)
    except DatabaseUnreachable as exc:
        raise CommandError(str(exc)) from None
    except Exception as exc:
        line = describe(settings.database_address, exc)
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
