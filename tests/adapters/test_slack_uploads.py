"""Files the agent sends, uploaded by the real slack_sdk client to the fake Slack through the
external upload flow: the bytes reach the upload URL, the file shows in the thread, 429s on
either step delay the upload and never drop or repeat it."""

from __future__ import annotations

import pytest

from adapters.slack import SlackPlatform, web_client
from gateway.platform import ConversationRef
from tests.fakes.slack_server import FakeSlack

PDF = b"%PDF-1.4\n" + bytes(range(256)) * 20


@pytest.fixture
async def slack_thread():
    async with FakeSlack() as fake:
        client = web_client(fake.world.bot_token, fake.api_base_url)
        platform = SlackPlatform(client)
        parent = await client.chat_postMessage(channel=fake.world.channel_id, text="session")
        conversation = ConversationRef("slack", fake.world.channel_id, parent["ts"])
        yield fake, platform, conversation


async def test_a_file_goes_up_in_three_steps_and_shows_in_the_thread(slack_thread):
    fake, platform, conversation = slack_thread
    sent = await platform.upload_file(conversation, "report.pdf", "application/pdf", PDF)
    asked = fake.ok_calls("files.getUploadURLExternal")
    assert [(c.body["filename"], c.body["length"]) for c in asked] == [
        ("report.pdf", str(len(PDF)))
    ]
    [done] = fake.ok_calls("files.completeUploadExternal")
    assert done.body["channel_id"] == conversation.channel_id
    assert done.body["thread_ts"] == conversation.thread_id
    [upload] = fake.file_uploads.shared()
    assert (upload.filename, upload.title, upload.data) == ("report.pdf", "report.pdf", PDF)
    assert sent.message_id == upload.ts
    thread = await platform.client.conversations_replies(
        channel=conversation.channel_id, ts=conversation.thread_id
    )
    shared = [f for m in thread["messages"] for f in m.get("files", [])]
    assert [(f["id"], f["name"], f["size"]) for f in shared] == [
        (upload.file_id, "report.pdf", len(PDF))
    ]


async def test_429s_on_each_step_delay_the_upload_and_never_repeat_it(slack_thread):
    fake, platform, conversation = slack_thread
    fake.rate_limit("files.getUploadURLExternal", times=1, retry_after=0)
    fake.rate_limit("/upload/v1/*", times=1, retry_after=0)
    fake.rate_limit("files.completeUploadExternal", times=1, retry_after=0)
    await platform.upload_file(conversation, "a.txt", "text/plain", b"hello")
    assert fake.rate_limits.pending == 0  # each step was refused once…
    assert [u.data for u in fake.file_uploads.shared()] == [b"hello"]  # …and it went up once
    assert len(fake.ok_calls("files.completeUploadExternal")) == 1
