"""`/rawp fork` through Slack (issue 30 §2): the real `rawp gateway` process in Slack HTTP mode
against the fake Slack, a real master and client, the real `claude` CLI against a fake
Anthropic API. Typed in the channel, the fork copies the user's newest session there into a
new thread; the original thread goes on."""

from __future__ import annotations

import json

from tests.agents.conftest import node_agents  # noqa: F401 - the fixture the stack needs
from tests.agents.fake_anthropic import Turn, text
from tests.fakes.slack_payloads import SlackWorld
from tests.fakes.slack_server import FakeSlack
from tests.gateway.chat_stack import slack_start, slack_text, start_slack_gateway
from tests.gateway.modes_support import claude_stack_fixture

WORLD = SlackWorld()
OWNER = f"slack:{WORLD.team_id}:{WORLD.alice['id']}"

stack_and_model = claude_stack_fixture(OWNER)


async def test_a_fork_from_slack_goes_on_in_a_new_thread(stack_and_model, processes, tmp_path):
    stack, model = stack_and_model
    async with model, FakeSlack(WORLD) as slack:
        _, bolt = start_slack_gateway(processes, stack, tmp_path, slack, WORLD)
        _, thread_ts = await slack_start(slack, WORLD, bolt, "claude")

        async def posted(needle: str, ts: str):
            return await slack.wait_for_call(
                "chat.postMessage",
                where=lambda c: needle in slack_text(c) and c.body.get("thread_ts") == ts,
                timeout=90,
            )

        model.script.append(Turn([text("noted: heron")]))
        await slack.post_event_to(bolt, WORLD.message_event("remember heron", thread_ts=thread_ts))
        await posted("noted: heron", thread_ts)

        await slack.post_slash_command_to(bolt, WORLD.slash_command("/rawp", "fork"))
        reply = await slack.log.wait_for_call(
            "POST", "/response-url/*", 60, where=lambda c: "Forked" in str(c.body["text"])
        )
        assert str(reply.body["text"]).startswith("🍴 Forked")
        parents = await slack.wait_for_call(
            "chat.postMessage", where=lambda c: slack_text(c).startswith("🧵"), count=2, timeout=60
        )
        fork_ts = parents.response["ts"]
        assert fork_ts != thread_ts
        model.script.append(Turn([text("the copy remembers")]))
        await slack.post_event_to(bolt, WORLD.message_event("which word?", thread_ts=fork_ts))
        await posted("the copy remembers", fork_ts)
        assert "remember heron" in json.dumps(model.main_requests()[-1]["messages"])

        model.script.append(Turn([text("original here")]))
        await slack.post_event_to(bolt, WORLD.message_event("still there?", thread_ts=thread_ts))
        await posted("original here", thread_ts)
