"""Issue 30 §4 through every process: the real master, the real client running the demo agent
(a real child process), the real `rawp gateway` process on the fake Discord and the fake Slack.

The demo agent's turn runs an `Edit`, publishes a task list and, for a prompt holding
`fullcontext`, reports 85 % of its context in use; its `/compact` compacts it. In the thread:
the task list is one progress message, edited in place to its final state with the context in
use; the warning is posted once; a compaction is a notice, and the share after it is shown."""

from __future__ import annotations

import pytest

from tests.edge.stack import running_stack
from tests.fakes.discord_payloads import DiscordWorld, command_option
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.slack_payloads import SlackWorld
from tests.fakes.slack_server import FakeSlack
from tests.gateway.chat_stack import (
    content,
    discord_ready,
    discord_start,
    slack_checked,
    slack_start,
    slack_text,
    start_discord_gateway,
    start_slack_gateway,
    sub,
)

DISCORD = DiscordWorld()
SLACK = SlackWorld()
WARNING = "⚠️ context 85% — compact it"
COMPACTED = "🗜️ The agent compacted its context (170,000 → 12,000 tokens)"


@pytest.fixture(scope="module")
def discord_stack(tmp_path_factory):
    owner = f"discord:{DISCORD.alice['id']}"
    with running_stack(tmp_path_factory.mktemp("progress-discord"), owner) as made:
        yield made


@pytest.fixture(scope="module")
def slack_stack(tmp_path_factory):
    owner = f"slack:{SLACK.team_id}:{SLACK.alice['id']}"
    with running_stack(tmp_path_factory.mktemp("progress-slack"), owner) as made:
        yield made


async def test_discord_progress_message_context_warning_and_compaction(
    discord_stack, processes, tmp_path
):
    async with FakeDiscord(DISCORD) as fake:
        start_discord_gateway(processes, discord_stack, tmp_path, fake, DISCORD)
        await discord_ready(fake)
        _, thread_id = await discord_start(fake)
        messages = f"/channels/{thread_id}/messages"
        typed = await fake.inject_message("fullcontext: fix it", channel_id=thread_id)
        await fake.wait_for_call("PUT", f"{messages}/{typed['id']}/reactions/✅/@me", timeout=60)
        posts = fake.calls("POST", messages)
        progress = [c for c in posts if content(c).startswith("📋 Tasks")]
        assert len(progress) == 1  # one message for the task list
        progress_id = progress[0].response["id"]
        edits = fake.calls("PATCH", f"{messages}/*")
        assert {c.path.rsplit("/", 1)[1] for c in edits} == {progress_id}
        assert content(edits[-1]).startswith("📋 Tasks (2/3 done)")
        assert content(edits[-1]).endswith("🧠 context 85%")
        assert [content(c).startswith(WARNING) for c in posts].count(True) == 1

        # The agent's own /compact (a slash command): a notice, and the share after it.
        run = sub("command", command_option("name", "compact"))
        await fake.inject_slash_command("rawp", run, channel_id=thread_id)
        notice = await fake.wait_for_call(
            "POST", messages, where=lambda c: content(c).startswith(COMPACTED), timeout=60
        )
        assert notice is not None
        await fake.wait_for_call(
            "PATCH", f"{messages}/*", where=lambda c: "🧠 context 6%" in content(c), timeout=60
        )
        assert [content(c).startswith(WARNING) for c in fake.calls("POST", messages)].count(
            True
        ) == 1  # 6 % warns no one


async def test_slack_progress_message_and_context_warning(slack_stack, processes, tmp_path):
    async with FakeSlack(SLACK) as slack:
        _, bolt = start_slack_gateway(processes, slack_stack, tmp_path, slack, SLACK)
        _, thread_ts = await slack_start(slack, SLACK, bolt)
        typed = SLACK.message_event("fullcontext: fix it", thread_ts=thread_ts)
        await slack.post_event_to(bolt, typed)
        await slack_checked(slack, typed)
        posts = slack.calls("chat.postMessage")
        progress = [c for c in posts if slack_text(c).startswith("📋 Tasks")]
        assert len(progress) == 1
        edits = [
            c for c in slack.calls("chat.update") if c.body["ts"] == progress[0].response["ts"]
        ]
        assert edits and slack_text(edits[-1]).endswith("🧠 context 85%")
        assert slack_text(edits[-1]).startswith("📋 Tasks (2/3 done)")
        assert [slack_text(c).startswith(WARNING) for c in posts].count(True) == 1
