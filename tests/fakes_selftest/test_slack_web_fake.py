"""A real slack_sdk AsyncWebClient against the fake Slack Web API."""

from __future__ import annotations

import aiohttp
import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.web.async_client import AsyncWebClient

from tests.fakes.slack_server import FakeSlack


@pytest.fixture
async def slack():
    async with FakeSlack() as fake:
        yield fake


def client_for(fake: FakeSlack, **kw) -> AsyncWebClient:
    return AsyncWebClient(token=fake.world.bot_token, base_url=fake.api_base_url, **kw)


async def test_post_update_react_and_read_a_thread(slack):
    client = client_for(slack)
    channel = slack.world.channel_id
    auth = await client.auth_test()
    assert auth["user_id"] == slack.world.bot_user_id

    parent = await client.chat_postMessage(channel=channel, text="session started")
    reply = await client.chat_postMessage(
        channel=channel,
        thread_ts=parent["ts"],
        text="working",
        blocks=[{"type": "section", "text": {"type": "mrkdwn", "text": "*working*"}}],
    )
    await client.chat_update(channel=channel, ts=reply["ts"], text="done")
    await client.reactions_add(channel=channel, timestamp=parent["ts"], name="hourglass")
    await client.reactions_remove(channel=channel, timestamp=parent["ts"], name="hourglass")
    await client.reactions_add(channel=channel, timestamp=parent["ts"], name="white_check_mark")
    await client.assistant_threads_setStatus(
        channel_id=channel, thread_ts=parent["ts"], status="is thinking…"
    )
    thread = await client.conversations_replies(channel=channel, ts=parent["ts"])
    assert [m["text"] for m in thread["messages"]] == ["session started", "done"]

    posted = slack.calls("chat.postMessage")
    assert posted[1].body["thread_ts"] == parent["ts"]
    assert posted[1].body["blocks"][0]["text"]["text"] == "*working*"
    assert posted[1].headers["Authorization"] == f"Bearer {slack.world.bot_token}"
    assert [c.path for c in slack.log][-4:] == [
        "reactions.remove",
        "reactions.add",
        "assistant.threads.setStatus",
        "conversations.replies",
    ]


async def test_metadata_is_read_back_only_when_asked_and_replies_come_in_pages(slack):
    client = client_for(slack)
    channel = slack.world.channel_id
    parent = await client.chat_postMessage(channel=channel, text="session started")
    tagged = {"event_type": "rawp_post", "event_payload": {"key": "m-1/0", "part": 0}}
    for n in range(5):
        await client.chat_postMessage(
            channel=channel, thread_ts=parent["ts"], text=f"chunk {n}",
            **({"metadata": tagged} if n == 3 else {}),
        )  # fmt: skip
    plain = await client.conversations_replies(channel=channel, ts=parent["ts"])
    assert not any("metadata" in m for m in plain["messages"])
    seen, cursor = [], None
    while True:
        page = await client.conversations_replies(
            channel=channel, ts=parent["ts"], include_all_metadata=True, limit=2,
            **({"cursor": cursor} if cursor else {}),
        )  # fmt: skip
        seen += page["messages"]
        cursor = (page.get("response_metadata") or {}).get("next_cursor")
        if not page["has_more"]:
            break
    assert [m["text"] for m in seen] == ["session started"] + [f"chunk {n}" for n in range(5)]
    assert [m.get("metadata") for m in seen if "metadata" in m] == [tagged]


async def test_slack_errors_come_back_as_slack_api_errors(slack):
    client = client_for(slack)
    with pytest.raises(SlackApiError) as missing:
        await client.chat_update(channel=slack.world.channel_id, ts="1.000001", text="x")
    assert missing.value.response["error"] == "message_not_found"

    too_long = [{"type": "section", "text": {"type": "mrkdwn", "text": "x" * 3001}}]
    with pytest.raises(SlackApiError) as invalid:
        await client.chat_postMessage(channel=slack.world.channel_id, text="x", blocks=too_long)
    assert invalid.value.response["error"] == "invalid_blocks"

    intruder = AsyncWebClient(token="xoxb-wrong", base_url=slack.api_base_url)
    with pytest.raises(SlackApiError) as refused:
        await intruder.auth_test()
    assert refused.value.response["error"] == "invalid_auth"


async def test_rate_limited_post_is_retried_after_retry_after(slack):
    client = client_for(slack, retry_handlers=[AsyncRateLimitErrorRetryHandler(max_retry_count=2)])
    slack.rate_limit("chat.postMessage", times=1, retry_after=1)
    answer = await client.chat_postMessage(channel=slack.world.channel_id, text="not lost")
    attempts = slack.calls("chat.postMessage")
    assert [c.status for c in attempts] == [429, 200]
    assert attempts[1].at - attempts[0].at >= 1.0  # slack_sdk waited Retry-After
    assert [c.body["text"] for c in slack.ok_calls("chat.postMessage")] == ["not lost"]
    assert answer["message"]["text"] == "not lost"


async def test_rate_limit_without_retry_handler_surfaces_the_429(slack):
    client = client_for(slack, retry_handlers=[])
    slack.rate_limit("reactions.add", times=1, retry_after=3)
    with pytest.raises(SlackApiError) as limited:
        await client.reactions_add(channel=slack.world.channel_id, timestamp="1.1", name="x")
    assert limited.value.response.status_code == 429
    assert limited.value.response.headers["Retry-After"] in ("3", ["3"])


async def test_shared_files_are_served_only_with_the_bot_token(slack):
    file = slack.add_file("notes.txt", b"hello")
    event = slack.world.message_event("see file", files=[file])
    assert event["subtype"] == "file_share" and event["files"][0]["size"] == 5
    url = file["url_private_download"]
    async with aiohttp.ClientSession() as session:
        bearer = {"Authorization": f"Bearer {slack.world.bot_token}"}
        async with session.get(url, headers=bearer) as allowed:
            assert allowed.status == 200 and await allowed.read() == b"hello"
        async with session.get(url) as anonymous:
            assert anonymous.status == 403
