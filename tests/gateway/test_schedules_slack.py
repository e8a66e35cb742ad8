"""`/rawp schedule …` and `/rawp schedules` through Slack (issue 30 §5): the real `rawp gateway`
process in Slack HTTP mode against the fake Slack, a real master and client. Typed in the
channel, a schedule takes the user's newest session there; each user sees only their own."""

from __future__ import annotations

import re

from tests.fakes.slack_payloads import SlackWorld
from tests.fakes.slack_server import FakeSlack
from tests.gateway.chat_stack import module_stack, slack_start, start_slack_gateway

WORLD = SlackWorld()
OWNER = f"slack:{WORLD.team_id}:{WORLD.alice['id']}"

stack = module_stack("schedules-slack", OWNER)


async def test_schedules_are_made_listed_and_deleted_from_slack(stack, processes, tmp_path):
    async with FakeSlack(WORLD) as slack:
        _, bolt = start_slack_gateway(processes, stack, tmp_path, slack, WORLD)
        answered: list = []

        async def rawp(text: str, user=None) -> str:
            fields = WORLD.slash_command("/rawp", text, user=user)
            await slack.post_slash_command_to(bolt, fields)
            reply = await slack.log.wait_for_call(
                "POST", "/response-url/*", 60, where=lambda c: c not in answered
            )
            answered.append(reply)
            return str(reply.body["text"])

        assert (await rawp('schedule "every day 9:00" early')).startswith("❌ Start a session")
        await slack_start(slack, WORLD, bolt)
        started = await slack.log.wait_for_call(
            "POST", "/response-url/*", 60, where=lambda c: "▶️" in str(c.body["text"])
        )
        answered.append(started)  # the start's own reply
        said = await rawp("schedule “every monday 9:00” review the open pull requests")
        assert said.startswith("⏰ Scheduled `") and "`0 9 * * 1` (UTC)" in said, said
        schedule_id = re.search(r"Scheduled `([0-9a-f-]+)`", said).group(1)
        assert "INVALID_SCHEDULE" in await rawp('schedule "every blue moon 9:00" hi')
        listed = await rawp("schedules")
        assert schedule_id in listed and "review the open pull requests" in listed
        assert (await rawp("schedules", user=WORLD.bob)).startswith("No schedules yet")
        assert "SCHEDULE_NOT_FOUND" in await rawp(f"schedule delete {schedule_id}", WORLD.bob)
        assert (await rawp(f"schedule pause {schedule_id}")).endswith("paused.")
        assert await rawp(f"schedule delete {schedule_id}") == (
            f"🗑 Deleted schedule `{schedule_id}`."
        )
        assert (await rawp("schedules")).startswith("No schedules yet")
