"""Run a fake platform by hand: `python -m tests.fakes discord` or `python -m tests.fakes slack`.

Prints the settings that point `rawp gateway` (or any real client) at the fake, then every call
it receives, until Ctrl-C. Events can only be injected from a test (the fakes' `inject_*` /
`push_*` helpers); this runner is for watching what a real gateway sends while it starts.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json

from .discord_server import FakeDiscord
from .slack_server import FakeSlack


def settings(fake: FakeDiscord | FakeSlack) -> list[str]:
    """Environment lines for the endpoints; the secrets as comments (their variable names are
    the adapter's choice)."""
    if isinstance(fake, FakeDiscord):
        return [
            f"DISCORD_API_BASE_URL={fake.api_base_url}",
            f"DISCORD_GATEWAY_URL={fake.gateway_url}",
            f"# bot token: {fake.world.bot_token}",
        ]
    return [
        f"SLACK_API_BASE_URL={fake.api_base_url}",
        f"# bot token: {fake.world.bot_token}",
        f"# app token: {fake.world.app_token}",
        f"# signing secret: {fake.world.signing_secret}",
    ]


async def serve(platform: str, port: int) -> None:
    fake = FakeDiscord(port=port) if platform == "discord" else FakeSlack(port=port)
    async with fake:
        for line in settings(fake):
            print(line, flush=True)
        printed = 0
        while True:  # until Ctrl-C
            calls = fake.log.calls
            for call in calls[printed:]:
                body = json.dumps(call.body, ensure_ascii=False)[:160]
                print(f"{call.status} {call.method} {call.path} {body}", flush=True)
            printed = len(calls)
            await asyncio.sleep(0.2)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.fakes", description=__doc__)
    parser.add_argument("platform", choices=["discord", "slack"])
    parser.add_argument("--port", type=int, default=0, help="loopback port (default: a free one)")
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args.platform, args.port))


if __name__ == "__main__":
    main()
