"""Bad input to the fakes gets the platform's own error answer, never a 500 or a dropped frame."""

from __future__ import annotations

import aiohttp
import pytest

from tests.fakes.discord_server import FakeDiscord
from tests.fakes.slack_server import FakeSlack


@pytest.fixture
async def discord_fake():
    async with FakeDiscord() as fake:
        yield fake


async def post_discord(fake: FakeDiscord, path: str, data) -> tuple[int, dict]:
    headers = {"Authorization": f"Bot {fake.world.bot_token}", "Content-Type": "application/json"}
    async with (
        aiohttp.ClientSession() as session,
        session.post(fake.api_base_url + path, data=data, headers=headers) as response,
    ):
        return response.status, await response.json()


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (b"{not json", 50109),
        (b"[1, 2]", 50035),
        (b'{"content": 5}', 50035),
        (b'{"content": "ok", "embeds": {}}', 50035),
    ],
)
async def test_discord_refuses_bad_bodies_with_its_error_codes(discord_fake, data, code):
    path = f"/channels/{discord_fake.world.channel_id}/messages"
    status, body = await post_discord(discord_fake, path, data)
    assert (status, body["code"]) == (400, code)
    assert discord_fake.calls("POST", path)[0].status == 400  # refused calls are recorded too


async def test_discord_unknown_route_and_missing_token(discord_fake):
    status, body = await post_discord(discord_fake, "/no/such/route", b"{}")
    assert (status, body["message"]) == (404, "404: Not Found")
    async with (
        aiohttp.ClientSession() as session,
        session.get(discord_fake.api_base_url + "/users/@me") as response,
    ):
        assert response.status == 401
    assert [c.status for c in discord_fake.log] == [404, 401]


@pytest.mark.parametrize(
    ("frame", "code"),
    [("{not json", 4002), ('{"op": 42, "d": null}', 4001), ('{"op": 2, "d": "token"}', 4002)],
)
async def test_discord_gateway_closes_on_bad_frames_like_discord(discord_fake, frame, code):
    async with (
        aiohttp.ClientSession() as session,
        session.ws_connect(discord_fake.gateway_url) as ws,
    ):
        hello = await ws.receive_json()
        assert hello["op"] == 10 and hello["d"]["heartbeat_interval"] > 0
        await ws.send_str(frame)
        closing = await ws.receive()
        assert closing.type == aiohttp.WSMsgType.CLOSE and closing.data == code


async def test_slack_refuses_bad_arguments_with_slack_errors():
    async with FakeSlack() as slack, aiohttp.ClientSession() as session:
        bearer = {"Authorization": f"Bearer {slack.world.bot_token}"}
        cases = [
            (
                {"data": b"{oops", "headers": {**bearer, "Content-Type": "application/json"}},
                "invalid_json",
            ),
            (
                {"json": {"channel": slack.world.channel_id, "blocks": {}}, "headers": bearer},
                "invalid_blocks_format",
            ),
            (
                {
                    "json": {"channel": slack.world.channel_id, "blocks": [{"text": "x" * 4000}]},
                    "headers": bearer,
                },
                "invalid_blocks",
            ),
            (
                {"data": {"channel": slack.world.channel_id, "blocks": "[oops"}, "headers": bearer},
                "invalid_blocks",
            ),
            ({"json": {"channel": 7, "text": "x"}, "headers": bearer}, "channel_not_found"),
        ]
        for request, error in cases:
            async with session.post(slack.api_base_url + "chat.postMessage", **request) as answer:
                assert answer.status == 200
                refused = await answer.json()
                assert refused["ok"] is False and refused["error"] == error
        assert [c.response["error"] for c in slack.calls("chat.postMessage")] == [
            error for _, error in cases
        ]
