"""Each ChatPlatform operation of SlackPlatform lands as the right Slack Web API call."""

from __future__ import annotations

import pytest

from adapters.slack import SlackPlatform, SlackSettings, web_client
from gateway.platform import ConversationRef
from tests.adapters.chat_support import RecordingHooks
from tests.adapters.slack_support import running_app
from tests.fakes.slack_server import FakeSlack


@pytest.fixture
async def slack_thread():
    async with FakeSlack() as fake:
        client = web_client(fake.world.bot_token, fake.api_base_url)
        platform = SlackPlatform(client)
        parent = await client.chat_postMessage(channel=fake.world.channel_id, text="session")
        conversation = ConversationRef("slack", fake.world.channel_id, parent["ts"])
        yield fake, platform, conversation


def methods(fake: FakeSlack) -> list[str]:
    return [c.path for c in fake.log if c.method != "WS"]


async def test_every_operation_is_one_slack_call(slack_thread):
    fake, platform, conversation = slack_thread
    start = len(fake.log)
    sent = await platform.send_message(conversation, "**bold** and a <tag> & `x < y`")
    await platform.edit_message(sent, "~~done~~ [docs](https://example.org)")
    await platform.add_reaction(sent, "⏳")
    await platform.add_reaction(sent, "⏳")  # already there: not an error
    await platform.remove_reaction(sent, "⏳")
    await platform.trigger_typing(conversation)
    await platform.set_status(conversation, "🔧 Using tools…")
    await platform.send_ephemeral(conversation, fake.world.bob["id"], "only you")
    await platform.delete_message(sent)
    await platform.delete_message(sent)  # already gone: not an error
    assert methods(fake)[start:] == [
        "chat.postMessage",
        "chat.update",
        "reactions.add",
        "reactions.add",
        "reactions.remove",
        "assistant.threads.setStatus",
        "assistant.threads.setStatus",
        "chat.postEphemeral",
        "chat.delete",
        "chat.delete",
    ]
    post = fake.calls("chat.postMessage")[-1].body
    assert post["thread_ts"] == conversation.thread_id
    assert post["blocks"] == [
        {
            "type": "section",
            "text": {"type": "mrkdwn", "text": "*bold* and a &lt;tag&gt; &amp; `x &lt; y`"},
        }
    ]
    update = fake.calls("chat.update")[0].body
    assert update["blocks"][0]["text"]["text"] == "~done~ <https://example.org|docs>"
    assert fake.calls("reactions.add")[0].body["name"] == "hourglass_flowing_sand"
    typing, status = fake.calls("assistant.threads.setStatus")
    assert typing.body["thread_ts"] == conversation.thread_id
    assert (typing.body["status"], status.body["status"]) == ("is working…", "🔧 Using tools…")
    ephemeral = fake.calls("chat.postEphemeral")[0].body
    assert (ephemeral["user"], ephemeral["text"]) == (fake.world.bob["id"], "only you")


async def test_a_status_a_post_took_down_is_not_cleared_again(slack_thread):
    """Slack removes the assistant status when the app posts in the thread (issue 19 §6): the
    turn end's clear is a call only while a status still shows."""
    fake, platform, conversation = slack_thread
    await platform.trigger_typing(conversation)
    await platform.send_message(conversation, "the answer")
    await platform.set_status(conversation, None)  # the post took it down: no call
    statuses = [c.body["status"] for c in fake.calls("assistant.threads.setStatus")]
    assert statuses == ["is working…"]
    await platform.set_status(conversation, "🔧 Using tools…")
    await platform.set_status(conversation, None)  # still showing: cleared
    await platform.set_status(conversation, None)  # already clear: no call
    statuses = [c.body["status"] for c in fake.calls("assistant.threads.setStatus")]
    assert statuses == ["is working…", "🔧 Using tools…", ""]


async def test_without_a_thread_the_status_is_a_message_edited_then_deleted(slack_thread):
    fake, platform, _ = slack_thread
    channel = ConversationRef("slack", fake.world.channel_id)
    await platform.trigger_typing(channel)
    await platform.trigger_typing(channel)  # one status message, not one per refresh
    await platform.set_status(channel, "🔧 Using tools…")
    await platform.set_status(channel, None)
    assert [c.path for c in fake.log if c.path.startswith("chat.")][-3:] == [
        "chat.postMessage",
        "chat.update",
        "chat.delete",
    ]
    assert fake.calls("assistant.threads.setStatus") == []
    status = fake.calls("chat.postMessage")[-1]
    assert status.body["text"] == "⋯ working…"
    assert fake.calls("chat.delete")[0].body["ts"] == status.response["ts"]


async def test_a_long_message_is_split_into_blocks_of_3000(slack_thread):
    fake, platform, conversation = slack_thread
    text = "\n\n".join(f"paragraph {n} " + "word " * 300 for n in range(20))
    await platform.send_message(conversation, text)
    post = fake.ok_calls("chat.postMessage")[-1].body
    blocks = [b["text"]["text"] for b in post["blocks"]]
    assert len(blocks) > 1 and all(len(b) <= 3000 for b in blocks)
    assert "".join(blocks).replace("\n", "").replace(" ", "") == text.replace("\n", "").replace(
        " ", ""
    )


async def test_open_thread_posts_a_parent_with_the_composer_button(slack_thread):
    fake, platform, _ = slack_thread
    opened = await platform.open_thread(ConversationRef("slack", fake.world.channel_id), "fix it")
    parent = fake.calls("chat.postMessage")[-1]
    assert opened.thread_id == parent.response["ts"]
    assert parent.body["blocks"][1]["elements"][0]["action_id"] == "rawp_compose"
    assert await platform.open_thread(opened, "again") == opened


async def test_a_429_is_waited_out_without_loss_duplicates_or_reordering(slack_thread):
    fake, platform, conversation = slack_thread
    fake.rate_limit("chat.postMessage", times=1, retry_after=0)
    for n in range(3):
        await platform.send_message(conversation, f"part {n}")
    attempts = fake.calls("chat.postMessage")[1:]  # after the thread's parent
    assert attempts[0].status == 429
    texts = [c.body["text"] for c in fake.ok_calls("chat.postMessage")[1:]]
    assert texts == ["part 0", "part 1", "part 2"]


async def test_hidden_thinking_is_shown_only_to_whoever_asks():
    async with FakeSlack() as fake, running_app(fake, RecordingHooks()) as bot:
        parent = await bot.client.chat_postMessage(channel=fake.world.channel_id, text="s")
        conversation = ConversationRef("slack", fake.world.channel_id, parent["ts"])
        await bot.platform.send_hidden(conversation, "💭 Thinking", "secret <plan>")
        hidden = fake.calls("chat.postMessage")[-1]
        assert "secret" not in str(hidden.body)
        button = hidden.body["blocks"][0]["accessory"]
        message = {**hidden.response["message"], "thread_ts": parent["ts"]}
        click = fake.world.block_actions(
            button["action_id"], button["value"], message=message, user=fake.world.bob
        )
        assert (await fake.post_interactive_to(bot.http_url, click)).status == 200
        shown = await fake.wait_for_call("chat.postEphemeral")
        assert shown.body["user"] == fake.world.bob["id"]
        assert shown.body["blocks"][0]["text"]["text"] == "secret &lt;plan&gt;"


def test_settings_need_the_token_of_their_mode():
    env = {"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xapp-1"}
    settings = SlackSettings.from_env(env)
    assert (settings.mode, settings.api_base_url) == ("socket", "https://slack.com/api/")
    assert "xoxb-1" not in repr(settings)
    with pytest.raises(ValueError, match="SLACK_SIGNING_SECRET"):
        SlackSettings.from_env({**env, "SLACK_MODE": "http"})
    with pytest.raises(ValueError, match="SLACK_APP_TOKEN"):
        SlackSettings.from_env({"SLACK_BOT_TOKEN": "xoxb-1"})
    gov = SlackSettings.from_env({**env, "SLACK_API_BASE_URL": "https://slack-gov.com/api/"})
    assert gov.api_base_url == "https://slack-gov.com/api/"


async def test_where_slack_refuses_set_status_a_status_message_stands_in(slack_thread):
    fake, _, conversation = slack_thread
    # No retries: the planned 429 stands for any refusal (a missing scope, not an assistant app).
    platform = SlackPlatform(web_client(fake.world.bot_token, fake.api_base_url, max_retries=0))
    fake.rate_limit("assistant.threads.setStatus", times=1, retry_after=0)
    await platform.trigger_typing(conversation)
    await platform.trigger_typing(conversation)
    await platform.set_status(conversation, "🔧 Using tools…")
    await platform.set_status(conversation, None)
    assert len(fake.calls("assistant.threads.setStatus")) == 1  # not asked again there
    status = fake.ok_calls("chat.postMessage")[-1]
    assert status.body["text"] == "⋯ working…"
    assert status.body["thread_ts"] == conversation.thread_id
    assert fake.ok_calls("chat.update")[-1].body["text"] == "🔧 Using tools…"
    assert fake.ok_calls("chat.delete")[-1].body["ts"] == status.response["ts"]


async def test_a_keyed_post_is_found_again_in_its_thread(slack_thread):
    fake, platform, conversation = slack_thread
    for n in range(250):  # more than one page of conversations.replies
        await platform.send_message(conversation, f"filler {n}")
    posted = await platform.send_keyed(conversation, "the chunk", "frame-9/2")
    assert fake.calls("chat.postMessage")[-1].body["metadata"] == {
        "event_type": "rawp_post",
        "event_payload": {"key": "frame-9/2", "part": 0},
    }
    assert await platform.find_keyed(conversation, "frame-9/2") == posted
    assert await platform.find_keyed(conversation, "frame-9/3") is None
    pages = fake.calls("conversations.replies")
    assert len(pages) == 4  # two pages of 200 for each search: the key is on the second
    assert all(c.query["include_all_metadata"] == "1" for c in pages)
