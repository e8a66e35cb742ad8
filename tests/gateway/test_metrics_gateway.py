"""The real `rawp gateway` process with `--metrics-address` and JSON logs, against a real master
and client (processes, the demo agent) and the fake Discord (issue 17 §2): a turn through a
thread moves the platform-call counters, a 429 injected on the thread's messages moves the
rate-limit counters (and the answer still arrives), `/health` answers, and neither the scrape
nor any log line carries the bot token, the edge secret or the interaction token."""

from __future__ import annotations

import json

import aiohttp
import pytest

from tests.edge.stack import EDGE_SECRET
from tests.fakes.discord_payloads import DiscordWorld
from tests.fakes.discord_server import FakeDiscord
from tests.gateway.chat_stack import content, discord_start, module_stack, start_discord_gateway
from tests.scrape import samples, value
from tests.support import free_port

WORLD = DiscordWorld()
OWNER = f"discord:{WORLD.alice['id']}"
ROUTE = "POST /channels/{id}/messages"


stack = module_stack("metrics-stack", OWNER)


async def test_a_turn_through_discord_moves_the_gateway_counters(stack, processes, tmp_path):
    port = free_port()
    async with FakeDiscord(WORLD) as discord_fake:
        gateway = start_discord_gateway(
            processes, stack, tmp_path, discord_fake, WORLD,
            "--metrics-address", f"127.0.0.1:{port}", RAWP_LOG_FORMAT="json",
        )  # fmt: skip
        await discord_fake.wait_for_ready_client(timeout=60)
        start, thread_id = await discord_start(discord_fake)
        messages = f"/channels/{thread_id}/messages"
        await discord_fake.wait_for_call("POST", messages, timeout=30)  # the greeting
        discord_fake.rate_limit("POST", messages, times=1, retry_after=0.2)
        await discord_fake.inject_message("hello metrics", channel_id=thread_id)
        await discord_fake.wait_for_call(
            "POST", messages, where=lambda c: 'You said: "hello metrics"' in content(c), timeout=60
        )
        assert [c.status for c in discord_fake.calls("POST", messages)].count(429) == 1

        base = f"http://127.0.0.1:{port}"
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{base}/metrics") as answer:
                assert answer.status == 200
                scraped = await answer.text()
            async with http.get(f"{base}/health") as answer:
                assert answer.status == 200 and (await answer.json())["status"] == "online"
        gateway.terminate()
        assert gateway.wait(timeout=30) == 0
        output = gateway.stdout.read().decode()

    found = samples(scraped)
    calls = "rawp_gateway_platform_calls_total"
    assert value(found, calls, platform="discord", method=ROUTE, status="429") == 1
    assert value(found, calls, platform="discord", method=ROUTE, status="200") >= 2
    assert value(found, calls, platform="discord", method="GET /users/@me", status="200") >= 1
    limited = {"platform": "discord", "method": ROUTE}
    assert value(found, "rawp_gateway_platform_rate_limited_total", **limited) == 1
    waited = value(found, "rawp_gateway_platform_rate_limit_wait_seconds_total", **limited)
    assert waited == pytest.approx(0.2, abs=0.01)
    assert value(found, "rawp_gateway_sessions", platform="discord", state="connected") == 1
    assert value(found, "rawp_gateway_sockets", platform="discord") == 1

    lines = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    assert lines, output
    for secret in (WORLD.bot_token, EDGE_SECRET, start["token"]):
        assert secret not in scraped
        assert secret not in output
    assert thread_id not in scraped and "hello metrics" not in scraped
