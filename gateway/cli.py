"""`rawp gateway`: run the chat bot for Discord, Slack or the console.

The platforms live in `adapters/`, above this package (tests/test_layout.py: gateway never
imports adapters). So, like `rawp.cli` loading each command by module name, the handler loads
the wiring module `adapters.launch` by name at run time; nothing here depends on a platform.
The edge service credential is read from the environment only (`RAWP_EDGE_SECRET`), so it
never shows in a process list.
"""

from __future__ import annotations

import argparse
import importlib
import os
from pathlib import Path

from rawp.cli import CommandError, writable_directory

WIRING_MODULE = "adapters.launch"


def configure(parser: argparse.ArgumentParser) -> None:
    env = os.environ.get
    parser.add_argument(
        "--master-url",
        default=env("RAWP_MASTER_URL", "http://127.0.0.1:8700"),
        help="base URL of the master's Edge API (RAWP_MASTER_URL)",
    )
    parser.add_argument(
        "--platform",
        choices=("discord", "slack", "console"),
        default=env("RAWP_PLATFORM") or None,
        help="chat platform (RAWP_PLATFORM); default: every platform whose token is "
        "configured (DISCORD_BOT_TOKEN, SLACK_BOT_TOKEN), else the console",
    )
    parser.add_argument(
        "--state-dir",
        type=Path,
        default=Path(env("RAWP_GATEWAY_STATE_DIR") or ".rawp/gateway"),
        help="where the conversation ↔ session database lives (RAWP_GATEWAY_STATE_DIR)",
    )
    parser.add_argument(
        "--agents",
        default=env("RAWP_GATEWAY_AGENTS", "demo"),
        help="comma-separated agent names offered when starting a session "
        "(RAWP_GATEWAY_AGENTS; any other name may still be typed)",
    )
    parser.add_argument(
        "--workspace",
        default=env("RAWP_GATEWAY_WORKSPACE") or None,
        help="workspace path sessions start in (RAWP_GATEWAY_WORKSPACE); "
        "default: the node's own default workspace",
    )
    parser.add_argument(
        "--show-thinking",
        action="store_true",
        default=env("RAWP_GATEWAY_SHOW_THINKING") == "1",
        help="show the model's thinking as hidden (spoiler) messages "
        "(RAWP_GATEWAY_SHOW_THINKING=1)",
    )
    parser.add_argument(
        "--approval-timeout",
        type=float,
        default=float(env("RAWP_GATEWAY_APPROVAL_TIMEOUT", "600")),
        help="seconds an approval waits when the agent names no timeout; then it is denied "
        "(RAWP_GATEWAY_APPROVAL_TIMEOUT, default 600 = 10 minutes)",
    )
    parser.add_argument(
        "--unredacted-nodes",
        default=env("RAWP_GATEWAY_UNREDACTED_NODES", ""),
        help="comma-separated node ids whose sessions are shown without redacting credentials "
        "(RAWP_GATEWAY_UNREDACTED_NODES; default none: every node is redacted, issue 15 §3)",
    )
    parser.add_argument(
        "--metrics-address",
        default=env("RAWP_GATEWAY_METRICS_ADDRESS") or None,
        help="host:port to serve GET /metrics and GET /health on, e.g. 127.0.0.1:9464 "
        "(RAWP_GATEWAY_METRICS_ADDRESS; default: not served)",
    )
    parser.add_argument(
        "--usage-footer",
        action="store_true",
        default=env("RAWP_USAGE_FOOTER") == "1",
        help="end every turn with a line of its tokens, cost and context use "
        "(RAWP_USAGE_FOOTER=1; default off)",
    )
    console = parser.add_argument_group("console platform")
    console.add_argument(
        "--user",
        default=env("RAWP_CONSOLE_USER", "local"),
        help="the console user; its master user is console:<user> (RAWP_CONSOLE_USER)",
    )
    console.add_argument(
        "--node",
        default=env("RAWP_CONSOLE_NODE") or None,
        help="machine to start the session on, by id or device name (RAWP_CONSOLE_NODE; "
        "default: the first online one)",
    )
    console.add_argument(
        "--agent",
        default=env("RAWP_CONSOLE_AGENT", "demo"),
        help="agent to start in the console session (RAWP_CONSOLE_AGENT, default demo)",
    )
    parser.set_defaults(handler=run)


def names(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def run(args: argparse.Namespace) -> int:
    import asyncio
    import logging

    secret = os.environ.get("RAWP_EDGE_SECRET", "")
    if not secret:
        raise CommandError(
            "set RAWP_EDGE_SECRET to the master's edge service credential "
            "(the same value the master was started with)"
        )
    if not 0 < args.approval_timeout <= 7 * 24 * 3600:
        raise CommandError("--approval-timeout must be a number of seconds from 0 to a week")
    metrics_address = None
    if args.metrics_address:
        from gateway.metrics import parse_address

        try:
            metrics_address = parse_address(args.metrics_address)
        except ValueError as exc:
            raise CommandError(f"--metrics-address: {exc}") from None
    launch = importlib.import_module(WIRING_MODULE)
    try:
        platforms = launch.choose_platforms(args.platform)
    except launch.LaunchError as exc:
        raise CommandError(str(exc)) from None
    if platforms == ("console",):
        # The console is the chat: only warnings go to stderr, the transcript to stdout.
        logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    else:
        logging.basicConfig(
            level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s"
        )
    config = launch.GatewayConfig(
        master_url=args.master_url,
        edge_secret=secret,
        database=writable_directory(Path(args.state_dir)) / "conversations.sqlite3",
        platforms=platforms,
        agents=names(args.agents) or ("demo",),
        workspace=args.workspace,
        show_thinking=args.show_thinking,
        approval_timeout_s=args.approval_timeout,
        unredacted_nodes=names(args.unredacted_nodes),
        usage_footer=args.usage_footer,
        console_user=args.user,
        node=args.node,
        agent=args.agent,
        metrics_address=metrics_address,
        metrics_token=os.environ.get("RAWP_METRICS_TOKEN") or None,
    )
    try:
        return asyncio.run(launch.run_gateway(config))
    except launch.LaunchError as exc:
        raise CommandError(str(exc)) from None
    except KeyboardInterrupt:
        return 130
