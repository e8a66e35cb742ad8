"""End to end through Slack: a real master and client (processes, the demo agent), the real
`rawp gateway` process in Slack HTTP mode pointed at the fake Slack (SLACK_API_BASE_URL), and
signed requests into its Bolt endpoint. One full turn with an approval, checked on the calls
the gateway made to the fake Slack."""

from __future__ import annotations

import json

from tests.fakes.slack_payloads import SlackWorld
from tests.fakes.slack_server import FakeSlack
from tests.gateway.chat_stack import (
    module_stack,
    slack_button_click,
    slack_checked,
    slack_greeting,
    slack_start,
    start_slack_gateway,
)

WORLD = SlackWorld()
OWNER = f"slack:{WORLD.team_id}:{WORLD.alice['id']}"


stack = module_stack("slack-stack", OWNER)


def blocks_of(call) -> list[dict]:
    blocks = call.body.get("blocks") or []
    return json.loads(blocks) if isinstance(blocks, str) else blocks


def text_of(call) -> str:
    return str(call.body.get("text") or "")


def in_thread(slack: FakeSlack, thread_ts: str) -> list:
    return [c for c in slack.ok_calls("chat.postMessage") if c.body.get("thread_ts") == thread_ts]


async def test_a_turn_with_an_approval_through_slack(stack, processes, tmp_path):
    async with FakeSlack(WORLD) as slack:
        gateway, bolt = start_slack_gateway(processes, stack, tmp_path, slack, WORLD)

        # /rawp start test-box demo → a thread parent in the channel, the greeting inside it
        answer, thread_ts = await slack_start(slack, WORLD, bolt)
        assert answer.status == 200
        await slack_greeting(slack)
        reply = await slack.log.wait_for_call("POST", "/response-url/*", 30)
        assert "demo on test-box" in json.dumps(reply.body)

        # A message in the thread is the prompt; the agent asks for approval first.
        event = WORLD.message_event("please approve this", thread_ts=thread_ts)
        await slack.post_event_to(bolt, event)
        question = await slack.wait_for_call(
            "chat.postMessage", where=lambda c: "Apply the change" in text_of(c), timeout=60
        )
        click = slack_button_click(WORLD, question, thread_ts, "Allow once")
        assert (await slack.post_interactive_to(bolt, click)).status == 200

        # The rest of the turn: the tool line with its diff, the answer, ✅ on the prompt.
        await slack.wait_for_call(
            "chat.postMessage", where=lambda c: "You chose: allow" in text_of(c), timeout=60
        )
        await slack_checked(slack, event, within=30)
        texts = [text_of(c) for c in in_thread(slack, thread_ts)]
        # Slack's mrkdwn has no fence languages: the diff is a plain ``` block under the line.
        tool = next(i for i, t in enumerate(texts) if t.startswith("✅ Edit") and "+++ b/" in t)
        answer_at = next(i for i, t in enumerate(texts) if 'You said: "please approve this"' in t)
        assert tool < answer_at
        assert slack.calls("assistant.threads.setStatus") or slack.calls("chat.update")

        gateway.terminate()
        assert gateway.wait(timeout=30) == 0
