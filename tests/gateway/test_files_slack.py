"""End to end through Slack: the demo agent's `agent.file` frames — one file in one piece, one
in four — cross a real client, master and `rawp gateway` process (Slack HTTP mode) and go up
through Slack's external upload flow into the session's thread, bytes equal."""

from __future__ import annotations

from client.demo_agent import demo_png, report_text
from tests.fakes.slack_payloads import SlackWorld
from tests.fakes.slack_server import FakeSlack
from tests.gateway.chat_stack import (
    module_stack,
    slack_checked,
    slack_greeting,
    slack_start,
    start_slack_gateway,
)

WORLD = SlackWorld()
OWNER = f"slack:{WORLD.team_id}:{WORLD.alice['id']}"


stack = module_stack("slack-files", OWNER)


async def test_files_the_agent_sends_are_uploaded_into_the_thread(stack, processes, tmp_path):
    async with FakeSlack(WORLD) as slack:
        _, bolt = start_slack_gateway(processes, stack, tmp_path, slack, WORLD)
        answer, thread_ts = await slack_start(slack, WORLD, bolt)
        assert answer.status == 200
        await slack_greeting(slack)
        # A 429 on the upload URL: the upload waits it out, it is neither dropped nor repeated.
        slack.rate_limit("/upload/v1/*", times=1, retry_after=0)

        prompt = "sendfile and bigfile please"
        event = WORLD.message_event(prompt, thread_ts=thread_ts)
        await slack.post_event_to(bolt, event)
        await slack_checked(slack, event)
        shared = slack.file_uploads.shared()
        assert [(u.filename, u.data) for u in shared] == [
            ("report.txt", report_text(prompt)),
            ("plot.png", demo_png()),
        ]
        assert {u.thread_ts for u in shared} == {thread_ts}
        assert slack.rate_limits.pending == 0
        thread = [
            f["name"]
            for (channel, _), m in slack.web_api.messages.items()
            if channel == WORLD.channel_id and m.get("thread_ts") == thread_ts
            for f in m.get("files", [])
        ]
        assert thread == ["report.txt", "plot.png"]
