"""Busy is visible through Slack (issue 16 §5): a real master and client (the demo agent), the
real `rawp gateway` process in Slack HTTP mode against the fake Slack. A first prompt waits on
an approval; messages sent meanwhile get :clock3: and one "queued (n)" line, and after
`/rawp busy interrupt` a message stops the turn instead."""

from __future__ import annotations

import json

from gateway.sessions.busy import queue_line
from tests.fakes.slack_payloads import SlackWorld
from tests.fakes.slack_server import FakeSlack
from tests.gateway.chat_stack import module_stack, slack_start, start_slack_gateway

WORLD = SlackWorld()
OWNER = f"slack:{WORLD.team_id}:{WORLD.alice['id']}"


stack = module_stack("busy-slack", OWNER)


def text_of(call) -> str:
    return str(call.body.get("text") or "")


def approve_button(call) -> tuple[str, dict]:
    blocks = call.body.get("blocks") or []
    blocks = json.loads(blocks) if isinstance(blocks, str) else blocks
    return next(
        (block.get("block_id", "actions"), element)
        for block in blocks
        if block.get("type") == "actions"
        for element in block.get("elements", [])
        if element["text"]["text"] == "Allow once"
    )


async def test_queued_messages_are_marked_and_interrupt_stops_the_turn(stack, processes, tmp_path):
    async with FakeSlack(WORLD) as slack:
        _, bolt = start_slack_gateway(processes, stack, tmp_path, slack, WORLD)
        _, thread_ts = await slack_start(slack, WORLD, bolt)

        async def say(text: str) -> dict:
            event = WORLD.message_event(text, thread_ts=thread_ts)
            await slack.post_event_to(bolt, event)
            return event

        async def reaction(method: str, event: dict, name: str):
            return await slack.wait_for_call(
                method,
                where=lambda c: (
                    c.body.get("name") == name and c.body.get("timestamp") == event["ts"]
                ),
                timeout=60,
            )

        async def posted(needle: str, **kw):
            return await slack.wait_for_call(
                "chat.postMessage", where=lambda c: needle in text_of(c), timeout=60, **kw
            )

        # The first turn waits on its approval; two more messages wait behind it.
        first = await say("please approve this")
        question = await posted("Apply the change")
        second = await say("second")
        await reaction("reactions.add", second, "clock3")
        line = await posted(queue_line(1))
        third = await say("third")
        await reaction("reactions.add", third, "clock3")
        line_ts = line.response["ts"]
        await slack.wait_for_call(
            "chat.update",
            where=lambda c: c.body.get("ts") == line_ts and queue_line(2) in text_of(c),
            timeout=30,
        )
        added = [c.body.get("name") for c in slack.calls("reactions.add")]
        assert "white_check_mark" not in added  # nothing finished yet

        # Approving ends the first turn; the others run in order, their 🕒 and the line go.
        block_id, allow = approve_button(question)
        message = {**question.body, "ts": question.response["ts"], "thread_ts": thread_ts}
        click = WORLD.block_actions(
            allow["action_id"], allow["value"], message=message, block_id=block_id
        )
        assert (await slack.post_interactive_to(bolt, click)).status == 200
        for event in (first, second, third):
            await reaction("reactions.add", event, "white_check_mark")
        for event in (second, third):
            await reaction("reactions.remove", event, "clock3")
        await slack.wait_for_call(
            "chat.delete", where=lambda c: c.body.get("ts") == line_ts, timeout=10
        )
        answers = [
            await posted(f'You said: "{t}"') for t in ("please approve this", "second", "third")
        ]
        stamps = [float(a.response["ts"]) for a in answers]
        assert stamps == sorted(stamps)

        # /rawp busy interrupt in the channel applies to its threads: a message stops the turn.
        await slack.post_slash_command_to(bolt, WORLD.slash_command("/rawp", "busy interrupt"))
        reply = await slack.log.wait_for_call(
            "POST", "/response-url/*", 30, where=lambda c: "interrupt" in json.dumps(c.body)
        )
        assert "now `interrupt`" in reply.body["text"]
        waiting = await say("please approve again")
        await slack.wait_for_call(
            "chat.postMessage",
            where=lambda c: "Apply the change" in text_of(c) and c.response != question.response,
            timeout=60,
        )
        instead = await say("do this instead")
        await reaction("reactions.add", waiting, "black_square_for_stop")
        await posted('You said: "do this instead"')
        await reaction("reactions.add", instead, "white_check_mark")
        on_waiting = [
            c.body.get("name")
            for c in slack.calls("reactions.add")
            if c.body.get("timestamp") == waiting["ts"]
        ]
        assert "white_check_mark" not in on_waiting
