"""Start where people talk, through Slack (issue 16 §1): a real master and client (processes,
the demo agent), the conversation layer in this process with the real Bolt app in HTTP mode
against the fake Slack. A top-level app mention opens the session in that message's thread; a
direct message opens one in its DM thread. Checked on the calls the app made to the fake Slack."""

from __future__ import annotations

import pytest

from tests.adapters.slack_support import running_app
from tests.fakes.slack_payloads import SlackWorld
from tests.fakes.slack_server import FakeSlack
from tests.gateway.chat_stack import conversation_service, module_stack, renderer_states

WORLD = SlackWorld()
OWNER = f"slack:{WORLD.team_id}:{WORLD.alice['id']}"


stack = module_stack("slack-start", OWNER)


@pytest.fixture
async def gateway(stack, tmp_path):
    """The fake Slack and the Bolt app around a conversation service, as `rawp gateway` does."""
    async with (
        conversation_service(stack, tmp_path) as service,
        FakeSlack(WORLD) as slack,
        running_app(slack, service) as bot,
    ):
        service.bind_platform(bot.platform)
        yield slack, bot.http_url, service


def text_of(call) -> str:
    return str(call.body.get("text") or "")


async def said(slack: FakeSlack, channel: str, thread_ts: str, text: str):
    return await slack.wait_for_call(
        "chat.postMessage",
        where=lambda c: (
            c.body.get("channel") == channel
            and c.body.get("thread_ts") == thread_ts
            and text in text_of(c)
        ),
        timeout=30,
    )


async def checked(slack: FakeSlack, channel: str, ts: str, service) -> None:
    try:
        await slack.wait_for_call(
            "reactions.add",
            where=lambda c: (
                c.body.get("channel") == channel
                and c.body.get("timestamp") == ts
                and c.body.get("name") == "white_check_mark"
            ),
            timeout=30,
        )
    except TimeoutError as exc:  # issue 32: say what the renderer knew, not only the calls
        raise AssertionError(f"{exc}\n{renderer_states(service)}") from None


async def test_a_top_level_mention_opens_the_session_in_its_thread(gateway):
    slack, bolt, service = gateway
    mention = WORLD.app_mention_event("fix the failing test")
    assert (await slack.post_event_to(bolt, mention)).status == 200

    thread = mention["ts"]
    await said(slack, WORLD.channel_id, thread, "Every message in this thread is a prompt")
    answer = await said(slack, WORLD.channel_id, thread, 'You said: "fix the failing test"')
    assert WORLD.bot_user_id not in text_of(answer)  # the mention left the prompt
    await checked(slack, WORLD.channel_id, mention["ts"], service)
    # Nothing went to the channel itself, and no usage text any more.
    assert all(c.body.get("thread_ts") for c in slack.calls("chat.postMessage"))
    assert not slack.calls("chat.postEphemeral")

    # The thread goes on as any session thread: a reply there is a prompt.
    reply = WORLD.message_event("and one more", thread_ts=thread)
    await slack.post_event_to(bolt, reply)
    await said(slack, WORLD.channel_id, thread, 'You said: "and one more"')
    assert await service.store.last_start(OWNER) is not None


async def test_a_direct_message_is_a_session_in_its_dm_thread(gateway):
    slack, bolt, service = gateway
    dm = WORLD.dm_channel_id
    first = WORLD.message_event("hello from a DM", channel=dm)
    assert first["channel_type"] == "im"
    await slack.post_event_to(bolt, first)

    thread = first["ts"]
    await said(slack, dm, thread, "Every message in this thread is a prompt")
    await said(slack, dm, thread, 'You said: "hello from a DM"')
    await checked(slack, dm, first["ts"], service)

    # A reply in that DM thread is a prompt for the same session.
    again = WORLD.message_event("and again", channel=dm, thread_ts=thread)
    await slack.post_event_to(bolt, again)
    await said(slack, dm, thread, 'You said: "and again"')
    assert len(service.live) == 1
