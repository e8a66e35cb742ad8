"""`/rawp resume` of a session that had a git worktree, then `/rawp worktree …` (issue 30 §2, §3)
through Slack: the real `rawp gateway` process against the fake Slack, a real master and client,
an ACP agent that offers `session/load`, a real repository. The resumed session runs in the
worktree and inherits it, so the worktree command acts on it (it used to answer NO_WORKTREE)."""

from __future__ import annotations

import re

from tests.client.test_worktrees import rawp_branches
from tests.fakes.slack_payloads import SlackWorld
from tests.fakes.slack_server import FakeSlack
from tests.gateway.chat_stack import slack_text, start_slack_gateway
from tests.gateway.resume_support import resume_stack_fixture
from tests.gateway.worktrees_support import worktree_of

WORLD = SlackWorld()
OWNER = f"slack:{WORLD.team_id}:{WORLD.alice['id']}"

stack = resume_stack_fixture(OWNER, repository=True)


async def test_a_resumed_session_keeps_its_worktree_for_the_worktree_command(
    stack, processes, tmp_path
):
    repo = stack.root
    async with FakeSlack(WORLD) as slack:
        _, bolt = start_slack_gateway(processes, stack, tmp_path, slack, WORLD)
        answered: list = []

        async def rawp(words: str) -> str:
            await slack.post_slash_command_to(bolt, WORLD.slash_command("/rawp", words))
            reply = await slack.log.wait_for_call(
                "POST", "/response-url/*", 60, where=lambda c: c not in answered
            )
            answered.append(reply)
            return str(reply.body["text"])

        started = await rawp("start test-box keeper --worktree")
        assert "own git worktree" in started, started
        first = re.search(r"session `([0-9a-f-]+)`", started).group(1)
        parent = await slack.wait_for_call(
            "chat.postMessage", where=lambda c: slack_text(c).startswith("🧵"), timeout=60
        )
        thread_ts = parent.response["ts"]

        def in_thread(text: str):
            return lambda c: text in slack_text(c) and c.body.get("thread_ts") == thread_ts

        await slack.post_event_to(bolt, WORLD.message_event("remember heron", thread_ts=thread_ts))
        await slack.wait_for_call("chat.postMessage", where=in_thread("noted"), timeout=90)
        worktree = worktree_of(repo, first)
        (worktree / "note.txt").write_text("heron\n")  # what the agent left in its worktree
        await rawp("end")
        said = await rawp("resume")
        assert said.startswith("🔁 Resumed"), said

        assert await rawp("worktree diff") == "Posted the diff in the thread."
        await slack.wait_for_call("chat.postMessage", where=in_thread("+heron"), timeout=30)
        merged = await rawp("worktree merge")
        assert merged.startswith("✅ Merged `rawp/"), merged
        assert (repo / "note.txt").read_text() == "heron\n"
        assert not worktree.exists() and rawp_branches(repo) == ""
