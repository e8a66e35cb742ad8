"""`/rawp mode` through Slack (issue 30 §1): the real `rawp gateway` process in Slack HTTP mode
against the fake Slack, a real master and client, the real `claude` CLI against a fake
Anthropic API. The slash command is typed in the channel and acts on the user's newest session
there; a bad name is refused with the three named; "accept-edits" lets the CLI edit without
asking; an agent without modes answers in the thread why not."""

from __future__ import annotations

import json

from tests.agents.conftest import node_agents  # noqa: F401 - the fixture the stack needs
from tests.agents.fake_anthropic import Turn, text, tool_use
from tests.fakes.slack_payloads import SlackWorld
from tests.fakes.slack_server import FakeSlack
from tests.gateway.chat_stack import slack_start, slack_text, start_slack_gateway
from tests.gateway.modes_support import claude_stack_fixture

WORLD = SlackWorld()
OWNER = f"slack:{WORLD.team_id}:{WORLD.alice['id']}"

stack_and_model = claude_stack_fixture(OWNER)


async def test_accept_edits_from_slack_and_an_agent_without_modes(
    stack_and_model, processes, tmp_path
):
    stack, model = stack_and_model
    async with model, FakeSlack(WORLD) as slack:
        _, bolt = start_slack_gateway(processes, stack, tmp_path, slack, WORLD)
        _, thread_ts = await slack_start(slack, WORLD, bolt, "claude")

        answered: list = []  # the mode replies read so far

        async def mode(words: str) -> str:
            await slack.post_slash_command_to(bolt, WORLD.slash_command("/rawp", f"mode {words}"))
            reply = await slack.log.wait_for_call(
                "POST",
                "/response-url/*",
                30,
                where=lambda c: "mode" in str(c.body["text"]) and c not in answered,
            )
            answered.append(reply)
            return str(reply.body["text"])

        async def posted(needle: str):
            return await slack.wait_for_call(
                "chat.postMessage",
                where=lambda c: needle in slack_text(c) and c.body.get("thread_ts") == thread_ts,
                timeout=90,
            )

        assert (
            await mode("yolo")
            == "❌ The mode is one of `plan` | `ask` | `accept-edits`, not “yolo”."
        )
        assert "Asked the agent for mode `accept-edits`" in await mode("accept-edits")
        await posted("Mode: accept-edits")

        target = stack.root / "notes.txt"
        target.write_text("a\n")
        edit = {"file_path": str(target), "old_string": "a", "new_string": "b"}
        model.script.append(Turn([tool_use("Edit", edit)]))
        model.script.append(Turn([text("Edited without asking.")]))
        await slack.post_event_to(bolt, WORLD.message_event("edit notes", thread_ts=thread_ts))
        await posted("Edited without asking.")
        assert target.read_text() == "b\n"
        asked = [c for c in slack.calls("chat.postMessage") if "Allow" in json.dumps(c.body)]
        assert not asked  # no approval question: the CLI was in acceptEdits

        # The demo agent has no modes: the thread says so (its session.error).
        await slack.post_slash_command_to(bolt, WORLD.slash_command("/rawp", "start test-box demo"))
        parent = await slack.wait_for_call(
            "chat.postMessage", where=lambda c: slack_text(c).startswith("🧵"), count=2, timeout=60
        )
        demo_ts = parent.response["ts"]
        await slack.wait_for_call(
            "chat.postMessage",
            where=lambda c: "demo on test-box" in slack_text(c) and c.body.get("thread_ts"),
            timeout=60,
        )
        assert "Asked the agent for mode `plan`" in await mode("plan")
        await slack.wait_for_call(
            "chat.postMessage",
            where=lambda c: (
                "has no modes to choose from" in slack_text(c)
                and c.body.get("thread_ts") == demo_ts
            ),
            timeout=60,
        )
