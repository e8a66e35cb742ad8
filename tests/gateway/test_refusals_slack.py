"""A message longer than its session's frames, in a Slack session thread (issue 28 §3): the
real `rawp gateway` in Slack HTTP mode against the fake Slack, a real master and a client whose
frames are pinned to 64 KiB (the demo agent). Slack delivers at most 40,000 characters, within
the gateway's own 1 MiB check; 40,000 "é" are 80 KB, so the master refuses the prompt. Its
refusal names the prompt: the message gets ❌ and a line that says why, and it never counts as
waiting — the next message runs at once, unmarked."""

from __future__ import annotations

import pytest

from tests.edge.stack import running_stack
from tests.fakes.slack_payloads import SlackWorld
from tests.fakes.slack_server import FakeSlack
from tests.gateway.chat_stack import (
    slack_checked,
    slack_start,
    slack_text,
    start_slack_gateway,
)

WORLD = SlackWorld()
OWNER = f"slack:{WORLD.team_id}:{WORLD.alice['id']}"


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    """A real master and a client whose sessions pin a 64 KiB `max_frame_size`."""
    small_frames = {"RAWP_CLIENT_MAX_FRAME_SIZE": "65536"}
    with running_stack(tmp_path_factory.mktemp("refusals-slack"), OWNER, env=small_frames) as made:
        yield made


async def test_a_message_the_master_refuses_is_marked_failed_and_never_waits(
    stack, processes, tmp_path
):
    async with FakeSlack(WORLD) as slack:
        _, bolt = start_slack_gateway(processes, stack, tmp_path, slack, WORLD)
        _, thread_ts = await slack_start(slack, WORLD, bolt)

        long = WORLD.message_event("é" * 40_000, thread_ts=thread_ts)
        await slack.post_event_to(bolt, long)
        await slack.wait_for_call(
            "reactions.add",
            where=lambda c: c.body.get("name") == "x" and c.body.get("timestamp") == long["ts"],
            timeout=60,
        )
        line = await slack.wait_for_call(
            "chat.postMessage", where=lambda c: "Too long" in slack_text(c), timeout=30
        )
        assert "max_frame_size 65,536" in slack_text(line)

        after = WORLD.message_event("hello after", thread_ts=thread_ts)
        await slack.post_event_to(bolt, after)
        await slack_checked(slack, after)
        marks = [
            (c.body.get("name"), c.body.get("timestamp")) for c in slack.calls("reactions.add")
        ]
        assert ("clock3", after["ts"]) not in marks
        said = [slack_text(c) for c in slack.calls("chat.postMessage")]
        assert not any("queued" in text for text in said)
