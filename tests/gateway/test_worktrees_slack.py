"""`/rawp worktree` and `/rawp start … --worktree` through Slack (issue 30 §3): the real
`rawp gateway` process in Slack HTTP mode against the fake Slack, a real master and client,
a real repository. Slack's slash commands come from the channel: they act on the user's newest
session there, an ended one included (its worktree outlives it)."""

from __future__ import annotations

import asyncio
import re

from tests.client.test_worktrees import rawp_branches
from tests.fakes.slack_payloads import SlackWorld
from tests.fakes.slack_server import FakeSlack
from tests.gateway.chat_stack import slack_text, start_slack_gateway
from tests.gateway.worktrees_support import worktree_of, worktree_stack_fixture

WORLD = SlackWorld()
OWNER = f"slack:{WORLD.team_id}:{WORLD.alice['id']}"

stack = worktree_stack_fixture(OWNER)


async def test_a_worktree_session_from_slack_is_diffed_and_merged(stack, processes, tmp_path):
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

        started = await rawp("start test-box writer --worktree")
        assert "own git worktree" in started, started
        session_id = re.search(r"session `([0-9a-f-]+)`", started).group(1)
        parent = await slack.wait_for_call(
            "chat.postMessage", where=lambda c: slack_text(c).startswith("🧵"), timeout=60
        )
        thread_ts = parent.response["ts"]
        await slack.post_event_to(bolt, WORLD.message_event("hello new.txt", thread_ts=thread_ts))
        await slack.wait_for_call(
            "chat.postMessage",
            where=lambda c: "wrote" in slack_text(c) and c.body.get("thread_ts") == thread_ts,
            timeout=90,
        )
        worktree = worktree_of(repo, session_id)
        assert (worktree / "new.txt").read_text() == "hello\n"

        assert await rawp("worktree rebase") == (
            "❌ Use the worktree command with `diff`, `merge` or `discard`."
        )
        assert await rawp("worktree diff") == "Posted the diff in the thread."
        diff = await slack.wait_for_call(
            "chat.postMessage",
            where=lambda c: "+hello" in slack_text(c) and c.body.get("thread_ts") == thread_ts,
            timeout=30,
        )
        posted = slack_text(diff)
        assert posted.startswith("Diff of `rawp/") and "```\ndiff --git a/new.txt" in posted
        merged = await rawp("worktree merge")
        assert merged.startswith("✅ Merged `rawp/") and "into `main`" in merged, merged
        assert (repo / "new.txt").read_text() == "hello\n"
        assert not await asyncio.to_thread(worktree.exists)
        assert rawp_branches(repo) == ""
        # The session ended with the merge; the command still finds it, and says it is done.
        assert "NO_WORKTREE" in await rawp("worktree discard")
