"""`/rawp resume` through Slack (issue 30 §2): the real `rawp gateway` process in Slack HTTP
mode against the fake Slack, a real master and client, and an ACP agent that offers
`session/load`. Slack's slash commands come from the channel: resume finds the user's newest
session there, and the resumed session goes on in that session's thread."""

from __future__ import annotations

from tests.fakes.slack_payloads import SlackWorld
from tests.fakes.slack_server import FakeSlack
from tests.gateway.chat_stack import slack_text, start_slack_gateway
from tests.gateway.resume_support import resume_stack_fixture

WORLD = SlackWorld()
OWNER = f"slack:{WORLD.team_id}:{WORLD.alice['id']}"

stack = resume_stack_fixture(OWNER)


async def test_an_ended_session_resumes_in_its_slack_thread(stack, processes, tmp_path):
    async with FakeSlack(WORLD) as slack:
        _, bolt = start_slack_gateway(processes, stack, tmp_path, slack, WORLD)
        answered: list = []

        async def rawp(words: str, user=None) -> str:
            command = WORLD.slash_command("/rawp", words, user=user)
            await slack.post_slash_command_to(bolt, command)
            reply = await slack.log.wait_for_call(
                "POST", "/response-url/*", 60, where=lambda c: c not in answered
            )
            answered.append(reply)
            return str(reply.body["text"])

        await rawp("start test-box keeper")
        parent = await slack.wait_for_call(
            "chat.postMessage", where=lambda c: slack_text(c).startswith("🧵"), timeout=60
        )
        thread_ts = parent.response["ts"]

        def in_thread(text: str):
            return lambda c: text in slack_text(c) and c.body.get("thread_ts") == thread_ts

        await slack.post_event_to(bolt, WORLD.message_event("remember heron", thread_ts=thread_ts))
        await slack.wait_for_call("chat.postMessage", where=in_thread("noted"), timeout=90)
        assert (await rawp("resume")).startswith("This session is still open")
        await rawp("end")
        # From the channel a command finds the caller's own sessions only: not Alice's.
        refused = await rawp("resume", user=WORLD.bob)
        assert refused.startswith("No session in this conversation"), refused
        said = await rawp("resume")
        assert said.startswith("🔁 Resumed"), said
        await slack.wait_for_call("chat.postMessage", where=in_thread("🔁 Resumed"), timeout=30)
        await slack.post_event_to(bolt, WORLD.message_event("which word?", thread_ts=thread_ts))
        await slack.wait_for_call(
            "chat.postMessage", where=in_thread("[loaded: fake-session-1]"), timeout=90
        )
