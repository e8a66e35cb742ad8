"""Audio clips through Slack (issue 30 §6): a real master and client (the demo agent, which
answers `You said: "<its prompt>"`), the real `rawp gateway` process in Slack HTTP mode against
the fake Slack, and a fake OpenAI-compatible transcription service in this test.

A clip in a session thread, and one that starts a session in a DM, becomes the prompt's text,
and the thread shows what the agent got; a failing service is one ⚠️ line and nothing reaches
the agent; a gateway with no service configured says which setting is missing."""

from __future__ import annotations

from typing import Any

from gateway.sessions.voice import NOT_CONFIGURED
from tests.fakes.slack_payloads import SlackWorld
from tests.fakes.slack_server import FakeSlack
from tests.fakes.transcription_server import FakeTranscription
from tests.gateway.chat_stack import (
    module_stack,
    slack_checked,
    slack_greeting,
    slack_start,
    slack_text,
    start_slack_gateway,
)

WORLD = SlackWorld()
OWNER = f"slack:{WORLD.team_id}:{WORLD.alice['id']}"
WEBM = b"\x1aE\xdf\xa3 a Slack audio clip"

stack = module_stack("voice-slack", OWNER)


def clip(slack: FakeSlack) -> dict[str, Any]:
    """A Slack audio clip as a shared file: `slack_audio`, recorded as audio/webm."""
    return slack.add_file("audio_message.webm", WEBM, "audio/webm") | {"subtype": "slack_audio"}


async def posted(slack: FakeSlack, thread_ts: str, needle: str):
    return await slack.wait_for_call(
        "chat.postMessage",
        where=lambda c: c.body.get("thread_ts") == thread_ts and needle in slack_text(c),
        timeout=60,
    )


def answers(slack: FakeSlack) -> list[str]:
    return [slack_text(c) for c in slack.calls("chat.postMessage") if "You said:" in slack_text(c)]


async def test_an_audio_clip_is_transcribed_into_the_prompt(stack, processes, tmp_path):
    async with FakeSlack(WORLD) as slack, FakeTranscription("check the logs") as whisper:
        _, bolt = start_slack_gateway(
            processes, stack, tmp_path, slack, WORLD, RAWP_GATEWAY_TRANSCRIBE_URL=whisper.base_url
        )
        _, thread_ts = await slack_start(slack, WORLD, bolt)
        await slack_greeting(slack)

        event = WORLD.message_event("", thread_ts=thread_ts, files=[clip(slack)])
        await slack.post_event_to(bolt, event)
        await slack_checked(slack, event)
        # The transcript is the prompt, and the audio is not also attached.
        await posted(slack, thread_ts, 'You said: "check the logs"\n\nNo files were referenced.')
        await posted(slack, thread_ts, "🎙️ check the logs")  # what the agent got, for all to see
        [heard] = whisper.requests
        assert (heard.filename, heard.content_type, heard.data) == (
            "audio_message.webm",
            "audio/webm",
            WEBM,
        )
        assert heard.model == "whisper-1" and heard.authorization is None

        # A clip sent to the app in a DM starts a session in its DM thread, transcribed.
        whisper.text = "hello from a walk"
        dm = WORLD.message_event("", channel=WORLD.dm_channel_id, files=[clip(slack)])
        await slack.post_event_to(bolt, dm)
        await slack_checked(slack, dm)
        await posted(slack, dm["ts"], "🎙️ hello from a walk")
        await posted(slack, dm["ts"], 'You said: "hello from a walk"')

        # The service fails: one ⚠️ line to the sender, nothing reaches the agent.
        whisper.status = 502
        failed = WORLD.message_event("", thread_ts=thread_ts, files=[clip(slack)])
        await slack.post_event_to(bolt, failed)
        warning = await slack.wait_for_call(
            "chat.postEphemeral", where=lambda c: "⚠️" in slack_text(c), timeout=30
        )
        assert "could not be transcribed" in slack_text(warning)
        assert "HTTP 502" in slack_text(warning)
        after = WORLD.message_event("typed instead", thread_ts=thread_ts)
        await slack.post_event_to(bolt, after)
        await slack_checked(slack, after)
        assert len(answers(slack)) == 3  # the failed clip sent nothing
        marked = [c.body.get("timestamp") for c in slack.calls("reactions.add")]
        assert failed["ts"] not in marked


async def test_without_a_transcription_service_the_app_says_so(stack, processes, tmp_path):
    async with FakeSlack(WORLD) as slack:
        _, bolt = start_slack_gateway(processes, stack, tmp_path, slack, WORLD)
        _, thread_ts = await slack_start(slack, WORLD, bolt)
        await slack_greeting(slack)

        event = WORLD.message_event("", thread_ts=thread_ts, files=[clip(slack)])
        await slack.post_event_to(bolt, event)
        refusal = await slack.wait_for_call(
            "chat.postEphemeral", where=lambda c: "⚠️" in slack_text(c), timeout=30
        )
        assert "voice messages need a transcription service" in slack_text(refusal)
        assert "RAWP_GATEWAY_TRANSCRIBE_URL" in slack_text(refusal)
        assert slack_text(refusal).startswith("⚠️ ") and len(NOT_CONFIGURED) > 100
        after = WORLD.message_event("typed", thread_ts=thread_ts)
        await slack.post_event_to(bolt, after)
        await slack_checked(slack, after)
        assert [a.split("\n")[0] for a in answers(slack)] == ['You said: "typed"']
        assert not [c for c in slack.calls("chat.postMessage") if "🎙️" in slack_text(c)]
        assert not [c for c in slack.log.calls if c.path.startswith("/files-pri/")]
