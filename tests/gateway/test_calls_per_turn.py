"""What a short turn costs on each platform, counted from the fakes' call logs (issue 19 §6).

The real renderer on the real adapters (discord.py against the fake Discord, slack_sdk against
the fake Slack) renders the turn `rawp demo-agent` sends for a plain prompt — its states, a
hidden thinking block, one `Edit` with its diff, a task list and a short answer — with the
agent's pauses on a fake clock, so the count does not depend on how busy the machine is (the
timed figures are bench/gateway.py's). Targets: at most 5 calls on Discord and 6 on Slack,
three of which are the turn's content (the tool line, the task list, the answer). A change
that adds a call to every turn fails here; say why in the issue before raising a target.
"""

from __future__ import annotations

from collections import Counter

from gateway.platform import ChatPlatform, ConversationRef, MessageRef
from gateway.rendering.render import SessionRenderer
from rawp.clock import FakeClock
from tests.adapters.chat_support import RecordingHooks
from tests.adapters.discord_support import running_bot
from tests.adapters.slack_support import running_app
from tests.fakes.calls import Call
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.slack_server import FakeSlack
from tests.gateway.demo_turns import PROMPT_ID, SESSION, Step, short_turn
from tests.gateway.support import ManualSleep, settle

DISCORD_MOST, SLACK_MOST = 5, 6


async def _no_frames(frame) -> None:
    return None


async def render_short_turn(
    platform: ChatPlatform,
    conversation: ConversationRef,
    message: MessageRef,
    log,
    steps: list[Step] | None = None,
) -> list[Call]:
    """The calls the fake received while the turn (`short_turn` unless `steps` names another)
    was rendered (its WebSocket frames aside)."""
    clock = FakeClock()
    sleep = ManualSleep(clock)
    renderer = SessionRenderer(
        platform, conversation, SESSION, send_frame=_no_frames, clock=clock, sleep=sleep
    )
    renderer.expect_prompt(PROMPT_ID, message, "alice")
    start = len(log)
    for frame, pause in steps if steps is not None else short_turn():
        await renderer.feed(frame)
        await sleep.advance(pause)
    assert renderer.turn is None  # the turn ended
    await sleep.advance(60)  # anything the turn left behind would call now
    await settle()
    await renderer.close()
    return [c for c in log.calls[start:] if c.method != "WS"]


def summary(calls: list[Call]) -> str:
    return ", ".join(f"{k} ×{n}" for k, n in Counter(f"{c.method} {c.path}" for c in calls).items())


async def test_a_short_turn_costs_discord_at_most_five_calls():
    async with FakeDiscord() as fake, running_bot(fake, RecordingHooks()) as bot:
        thread = await fake.add_thread("session 1")
        conversation = ConversationRef("discord", fake.world.channel_id, thread["id"])
        typed = fake.world.message(thread["id"], "fix the login bug", author=fake.world.alice)
        fake.rest.messages[typed["id"]] = typed
        message = MessageRef(conversation, typed["id"])
        calls = await render_short_turn(bot.platform, conversation, message, fake.log)
    posts = [c for c in calls if c.method == "POST" and c.path.endswith("/messages")]
    assert len(posts) == 3, summary(calls)  # the tool line, the task list, the answer
    assert len(calls) <= DISCORD_MOST, summary(calls)
    assert calls[0].path.endswith("/typing")  # G-NS-04: typing first
    assert calls[-1].method == "PUT" and "/reactions/✅/" in calls[-1].path


async def test_a_short_turn_costs_slack_at_most_six_calls():
    async with FakeSlack() as fake, running_app(fake, RecordingHooks()) as bot:
        parent = await bot.client.chat_postMessage(channel=fake.world.channel_id, text="🧵")
        conversation = ConversationRef("slack", fake.world.channel_id, parent["ts"])
        event = fake.world.message_event("fix the login bug", thread_ts=parent["ts"])
        fake.remember_message(event)
        message = MessageRef(conversation, event["ts"])
        calls = await render_short_turn(bot.platform, conversation, message, fake.log)
    posts = [c for c in calls if c.path == "chat.postMessage"]
    assert len(posts) == 3, summary(calls)
    assert len(calls) <= SLACK_MOST, summary(calls)
    assert calls[0].path == "assistant.threads.setStatus"  # typing: "is working…" first
    assert calls[-1].path == "reactions.add" and calls[-1].body["name"] == "white_check_mark"
