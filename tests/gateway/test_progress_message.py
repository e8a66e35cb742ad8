"""Issue 30 §4 end to end: a multi-tool turn's progress message on the real adapters.

The real renderer on discord.py against the fake Discord and slack_sdk against the fake Slack
renders `tool_heavy_turn` (ten tools, three task-list updates, a parallel group) with the
agent's pauses on a fake clock, plus the context use the agent reports at its end. Counted
from the fakes' call logs: the task list and the running tool are ONE message — one post, then
a few coalesced edits (far fewer than the changes the turn made), the last of which shows the
final task state and the context in use — and the context warning is posted once.
"""

from __future__ import annotations

from gateway.platform import ConversationRef, MessageRef
from rawp.frames import make_frame
from tests.adapters.chat_support import RecordingHooks
from tests.adapters.discord_support import running_bot
from tests.adapters.slack_support import running_app
from tests.fakes.calls import Call
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.slack_server import FakeSlack
from tests.gateway.demo_turns import SESSION, Step, tool_heavy_turn
from tests.gateway.test_calls_per_turn import render_short_turn, summary

TURN = "turn-tools"


def final(strike: str) -> str:
    """The final task state with the context in use, `strike` the platform's strikethrough."""
    done = [f"● {strike}Step {i}{strike}" for i in range(4)]
    return "\n".join(["📋 Tasks (4/4 done)", *done, "🧠 context 85%"])


WARNING = "⚠️ context 85% — compact it (the agent's `compact` command) or start a new session soon"
# The changes the progress message went through: 3 lists + 7 tools started + 7 finished (the
# TodoWrite calls among them) + the context; each would have been a call without coalescing.
CHANGES = 15


def multi_tool_turn() -> list[Step]:
    """`tool_heavy_turn`, with the agent reporting 85% of its context in use at its end."""
    steps = tool_heavy_turn(TURN)
    usage = {"input_tokens": 170_000, "output_tokens": 10}
    usage |= {"context_tokens": 170_000, "context_window": 200_000}
    reported = make_frame("session.usage", usage, session_id=SESSION, turn_id=TURN)
    return [*steps[:-1], (reported, 0.0), steps[-1]]


def check_progress(
    posted: list[tuple[str, str]], edits: list[tuple[str, str]], calls, strike: str
) -> None:
    """`posted`: (message id, text) of each post; `edits`: (message id, text) of each edit."""
    progress = [mid for mid, text in posted if text.startswith("📋 Tasks (0/4 done)")]
    assert len(progress) == 1, summary(calls)  # one post for the task list and running tool
    assert not any(t.startswith("📋") for mid, t in posted if mid not in progress)
    assert {mid for mid, _ in edits} == set(progress), summary(calls)  # edits of that one only
    assert 2 <= len(edits) <= 5 < CHANGES, summary(calls)  # coalesced within the budget
    assert any("🔧 Running" in text for _, text in edits)  # the running tool was shown
    assert edits[-1][1] == final(strike)  # the final task state, no running tool, the context
    assert [text for _, text in posted].count(WARNING) == 1


async def test_discord_shows_one_progress_message_edited_in_place():
    async with FakeDiscord() as fake, running_bot(fake, RecordingHooks()) as bot:
        thread = await fake.add_thread("session 1")
        conversation = ConversationRef("discord", fake.world.channel_id, thread["id"])
        typed = fake.world.message(thread["id"], "run the checks", author=fake.world.alice)
        fake.rest.messages[typed["id"]] = typed
        message = MessageRef(conversation, typed["id"])
        calls = await render_short_turn(
            bot.platform, conversation, message, fake.log, multi_tool_turn()
        )
    posted = [
        (c.response["id"], c.body["content"])
        for c in calls
        if c.method == "POST" and c.path.endswith("/messages")
    ]
    edits = [(c.path.rsplit("/", 1)[1], c.body["content"]) for c in calls if c.method == "PATCH"]
    check_progress(posted, edits, calls, "~~")


async def test_slack_shows_one_progress_message_edited_in_place():
    async with FakeSlack() as fake, running_app(fake, RecordingHooks()) as bot:
        parent = await bot.client.chat_postMessage(channel=fake.world.channel_id, text="🧵")
        conversation = ConversationRef("slack", fake.world.channel_id, parent["ts"])
        event = fake.world.message_event("run the checks", thread_ts=parent["ts"])
        fake.remember_message(event)
        message = MessageRef(conversation, event["ts"])
        calls: list[Call] = await render_short_turn(
            bot.platform, conversation, message, fake.log, multi_tool_turn()
        )
    posted = [(c.response["ts"], c.body["text"]) for c in calls if c.path == "chat.postMessage"]
    edits = [(c.body["ts"], c.body["text"]) for c in calls if c.path == "chat.update"]
    check_progress(posted, edits, calls, "~")  # mrkdwn strikes with one tilde
