"""End to end through Slack: the demo agent's `agent.file` frames — one file in one piece, one
in four — cross a real client, master and `rawp gateway` process (Slack HTTP mode) and go up
through Slack's external upload flow into the session's thread, bytes equal."""

from __future__ import annotations

import pytest

from client.demo_agent import demo_png, report_text
from tests.edge.stack import EDGE_SECRET, running_stack
from tests.fakes.slack_payloads import SlackWorld
from tests.fakes.slack_server import FakeSlack
from tests.support import free_port, wait_for_http

WORLD = SlackWorld()
OWNER = f"slack:{WORLD.team_id}:{WORLD.alice['id']}"


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    with running_stack(tmp_path_factory.mktemp("slack-files"), OWNER) as made:
        yield made


async def test_files_the_agent_sends_are_uploaded_into_the_thread(stack, processes, tmp_path):
    async with FakeSlack(WORLD) as slack:
        port = free_port()
        env = {
            "RAWP_EDGE_SECRET": EDGE_SECRET,
            "SLACK_BOT_TOKEN": WORLD.bot_token,
            "SLACK_MODE": "http",
            "SLACK_SIGNING_SECRET": WORLD.signing_secret,
            "SLACK_API_BASE_URL": slack.api_base_url,
            "SLACK_HTTP_HOST": "127.0.0.1",
            "SLACK_HTTP_PORT": str(port),
            "DISCORD_BOT_TOKEN": "",
            "RAWP_PLATFORM": "",
        }
        gateway = processes.rawp(
            "gateway", "--master-url", stack.master_url, "--state-dir", str(tmp_path / "gw"),
            "--workspace", str(stack.root), env=env,
        )  # fmt: skip
        bolt = f"http://127.0.0.1:{port}/slack/events"
        wait_for_http(bolt, proc=gateway, timeout=60)
        answer = await slack.post_slash_command_to(
            bolt, WORLD.slash_command("/rawp", "start test-box demo")
        )
        assert answer.status == 200
        parent = await slack.wait_for_call(
            "chat.postMessage",
            where=lambda c: str(c.body.get("text") or "").startswith("🧵"),
            timeout=60,
        )
        thread_ts = parent.response["ts"]
        await slack.wait_for_call(
            "chat.postMessage",
            where=lambda c: "Every message in this thread" in str(c.body.get("text") or ""),
            timeout=30,
        )
        # A 429 on the upload URL: the upload waits it out, it is neither dropped nor repeated.
        slack.rate_limit("/upload/v1/*", times=1, retry_after=0)

        prompt = "sendfile and bigfile please"
        event = WORLD.message_event(prompt, thread_ts=thread_ts)
        await slack.post_event_to(bolt, event)
        await slack.wait_for_call(
            "reactions.add",
            where=lambda c: (
                c.body.get("name") == "white_check_mark" and c.body.get("timestamp") == event["ts"]
            ),
            timeout=60,
        )
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
