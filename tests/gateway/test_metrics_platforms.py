"""Gateway metrics (issue 17 §2): every Discord REST call and Slack Web API call is counted by
method and status, a 429 moves the rate-limit counters and the wait it asked for, and the
scrape served by `MetricsServer` names no token and no id. Real discord.py and slack_sdk
clients against the fake platforms (docs/testing-platforms.md), 429s injected there."""

from __future__ import annotations

import aiohttp
import pytest

from adapters.discord import DiscordBot
from adapters.slack import SlackBot
from gateway.metrics import GatewayMetrics, MetricsServer, parse_address
from gateway.platform import ConversationRef
from tests.adapters.discord_support import settings_for as discord_settings
from tests.adapters.slack_support import settings_for as slack_settings
from tests.fakes.discord_server import FakeDiscord, discord_endpoints
from tests.fakes.slack_server import FakeSlack
from tests.scrape import samples, value


async def scrape(metrics: GatewayMetrics, headers: dict | None = None) -> tuple[int, str]:
    server = MetricsServer(metrics, token=(headers or {}).get("token"))
    url = await server.start("127.0.0.1", 0)
    try:
        async with (
            aiohttp.ClientSession() as http,
            http.get(f"{url}/metrics", headers=(headers or {}).get("send")) as answer,
        ):
            return answer.status, await answer.text()
    finally:
        await server.close()


async def test_discord_calls_and_a_429_are_counted_and_no_token_or_id_is_shown():
    metrics = GatewayMetrics()
    async with FakeDiscord() as fake:
        thread = await fake.add_thread("session 1")
        with discord_endpoints(fake):
            bot = DiscordBot(discord_settings(fake), None, metrics, guild_ready_timeout=0.05)
            await bot.run_in_background(ready_timeout=15)
            try:
                conversation = ConversationRef("discord", fake.world.channel_id, thread["id"])
                path = f"/channels/{thread['id']}/messages"
                fake.rate_limit("POST", path, times=1, retry_after=0.2)
                await bot.platform.send_message(conversation, "one")
                await bot.platform.send_message(conversation, "two")
            finally:
                await bot.close()
        delivered = [c.body["content"] for c in fake.log.successful("POST", path)]
        assert delivered == ["one", "two"]  # the 429 delayed the call, it did not drop it
        status, text = await scrape(metrics)
    assert status == 200
    found = samples(text)
    route = "POST /channels/{id}/messages"
    calls = "rawp_gateway_platform_calls_total"
    assert value(found, calls, platform="discord", method=route, status="429") == 1
    assert value(found, calls, platform="discord", method=route, status="200") == 2
    limited = dict(platform="discord", method=route)
    assert value(found, "rawp_gateway_platform_rate_limited_total", **limited) == 1
    waited = value(found, "rawp_gateway_platform_rate_limit_wait_seconds_total", **limited)
    assert waited == pytest.approx(0.2, abs=0.01)
    for secret in (fake.world.bot_token, thread["id"], fake.world.channel_id, "one", "two"):
        assert str(secret) not in text.replace("rawp_gateway", ""), secret


async def test_slack_calls_and_a_429_are_counted():
    metrics = GatewayMetrics()
    async with FakeSlack() as fake:
        bot = SlackBot(slack_settings(fake, "http"), None, metrics)
        await bot.start()
        try:
            fake.rate_limit("chat.postMessage", times=1, retry_after=0)
            await bot.client.chat_postMessage(channel=fake.world.channel_id, text="hello")
        finally:
            await bot.close()
        assert [c.body["text"] for c in fake.ok_calls("chat.postMessage")] == ["hello"]
        status, text = await scrape(metrics)
    assert status == 200
    found = samples(text)
    calls = "rawp_gateway_platform_calls_total"
    assert value(found, calls, platform="slack", method="chat.postMessage", status="429") == 1
    assert value(found, calls, platform="slack", method="chat.postMessage", status="200") == 1
    limited = dict(platform="slack", method="chat.postMessage")
    assert value(found, "rawp_gateway_platform_rate_limited_total", **limited) == 1
    assert fake.world.bot_token not in text


async def test_the_scrape_needs_the_token_when_one_is_set():
    metrics = GatewayMetrics()
    refused, body = await scrape(metrics, {"token": "scrape-token-123456"})
    assert refused == 403 and "METRICS_FORBIDDEN" in body
    wrong = {"token": "scrape-token-123456", "send": {"Authorization": "Bearer nope"}}
    assert (await scrape(metrics, wrong))[0] == 403
    right = {
        "token": "scrape-token-123456",
        "send": {"Authorization": "Bearer scrape-token-123456"},
    }
    status, text = await scrape(metrics, right)
    assert status == 200 and "rawp_gateway_platform_calls_total" in text


@pytest.mark.parametrize(
    "text, expected",
    [
        ("127.0.0.1:9464", ("127.0.0.1", 9464)),
        ("[::1]:0", ("::1", 0)),
        ("0.0.0.0:1", ("0.0.0.0", 1)),
    ],
)
def test_metrics_addresses_parse(text, expected):
    assert parse_address(text) == expected


@pytest.mark.parametrize("text", ["9464", "host:", ":80", "h:99999", "h:x"])
def test_bad_metrics_addresses_are_refused(text):
    with pytest.raises(ValueError, match="host:port"):
        parse_address(text)
