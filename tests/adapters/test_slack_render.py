"""Recorded turns rendered by the real renderer onto the real Slack adapter (fake Slack)."""

from __future__ import annotations

import pytest

from gateway.platform import ConversationRef, MessageRef
from gateway.rendering.chunker import fence_after
from gateway.rendering.render import SessionRenderer
from rawp.events import InteractionResponse
from tests.adapters.chat_support import RecordingHooks
from tests.adapters.slack_support import running_app
from tests.fakes.slack_server import FakeSlack
from tests.gateway.fixtures.build import PROMPT, SESSION
from tests.gateway.support import Recorder, load_fixture


class Turn:
    """A session thread, the user's message in it, and a renderer drawing on Slack."""

    def __init__(self, fake: FakeSlack, bot, thread_ts: str) -> None:
        self.fake, self.bot = fake, bot
        self.conversation = ConversationRef("slack", fake.world.channel_id, thread_ts)
        self.sent = Recorder()
        self.renderer = SessionRenderer(
            bot.platform, self.conversation, SESSION, send_frame=self.sent
        )

    async def user_says(self, text: str) -> MessageRef:
        event = self.fake.world.message_event(text, thread_ts=self.conversation.thread_id)
        self.fake.remember_message(event)
        ref = MessageRef(self.conversation, event["ts"])
        self.renderer.expect_prompt(PROMPT, ref, self.fake.world.alice["id"])
        return ref

    async def play(self, frames) -> None:
        for frame in frames:
            await self.renderer.feed(frame)

    def calls_since(self, start: int) -> list:
        return [c for c in list(self.fake.log)[start:] if c.method != "WS"]


async def new_turn(fake: FakeSlack, bot) -> Turn:
    parent = await bot.client.chat_postMessage(channel=fake.world.channel_id, text="🧵 session")
    return Turn(fake, bot, parent["ts"])


@pytest.fixture
async def slack_turn():
    async with FakeSlack() as fake, running_app(fake, RecordingHooks()) as bot:
        yield await new_turn(fake, bot)


def block_texts(call) -> list[str]:
    return [b["text"]["text"] for b in call.body.get("blocks") or [] if "text" in b]


async def test_a_rendered_turn_is_status_hourglass_lines_diff_and_check(slack_turn):
    turn = slack_turn
    user = await turn.user_says("fix auth")
    start = len(turn.fake.log)
    await turn.play(load_fixture("tool_diff.jsonl"))
    calls = turn.calls_since(start)
    names = [c.path for c in calls]
    assert names[0] == "assistant.threads.setStatus"  # typing: "is working…" at once
    assert calls[0].body["status"] == "is working…"
    assert names[-1] == "reactions.add"
    assert calls[-1].body == {
        "channel": turn.conversation.channel_id,
        "timestamp": user.message_id,
        "name": "white_check_mark",
    }
    # A turn this quick: no ⏳ (gateway.rendering.working_mark), no status line within it
    # (gateway.rendering.status_line), and no clearing call — the posts took the status down.
    assert names.count("assistant.threads.setStatus") == 1
    assert "reactions.remove" not in names and names.count("reactions.add") == 1
    posts = [c for c in calls if c.path == "chat.postMessage"]
    assert all(c.body["thread_ts"] == turn.conversation.thread_id for c in posts)
    first = "\n".join(block_texts(posts[0]))
    assert first.startswith("✅ Edit (src/auth.ts)")
    assert "```\ndiff --git a/src/auth.ts b/src/auth.ts" in first  # the diff block, fenced
    assert "-  return true\n+  return check(t.exp)" in first
    assert all(fence_after(None, t) is None for p in posts for t in block_texts(p))


async def test_a_long_answer_is_blocks_with_balanced_fences_in_order(slack_turn):
    turn = slack_turn
    await turn.user_says("rewrite score()")
    start = len(turn.fake.log)
    await turn.play(load_fixture("long_answer.jsonl"))
    posts = [c for c in turn.calls_since(start) if c.path == "chat.postMessage"]
    texts = [t for p in posts for t in block_texts(p)]
    assert len(texts) >= 2 and all(len(t) <= 3000 for t in texts)
    assert all(fence_after(None, t) is None for t in texts)
    assert not any("```python" in t for t in texts)  # Slack would print the language
    steps = [
        int(line.rsplit(" ", 1)[1]) for t in texts for line in t.split("\n") if "# step" in line
    ]
    assert steps == list(range(len(steps))) and len(steps) == 80


async def test_a_click_by_the_turn_user_answers_and_another_user_is_refused(slack_turn):
    turn, fake = slack_turn, slack_turn.fake
    await turn.user_says("run the tests")
    frames = load_fixture("approval.jsonl")
    asking = next(i for i, f in enumerate(frames) if f.type == "agent.interaction.request")
    await turn.play(frames[: asking + 1])
    posted = fake.calls("chat.postMessage")[-1]
    buttons = posted.body["blocks"][1]["elements"]
    assert [b["text"]["text"] for b in buttons] == ["Allow once", "Deny"]
    assert [b.get("style") for b in buttons] == ["primary", "danger"]
    message = {**posted.response["message"]}
    allow = buttons[0]

    bob_click = fake.world.block_actions(
        allow["action_id"], allow["value"], message=message, user=fake.world.bob
    )
    assert (await fake.post_interactive_to(turn.bot.http_url, bob_click)).status == 200
    refusal = await fake.wait_for_call("chat.postEphemeral")
    assert refusal.body["user"] == fake.world.bob["id"]
    assert "Only the person who started this turn" in refusal.body["text"]

    alice_click = fake.world.block_actions(allow["action_id"], allow["value"], message=message)
    assert (await fake.post_interactive_to(turn.bot.http_url, alice_click)).status == 200
    answer = await turn.sent.next()
    assert answer.payload == InteractionResponse(interaction_id="perm-1", option_id="allow")
    assert answer.parent_id == frames[asking].message_id
    closed = await fake.wait_for_call("chat.update", where=lambda c: c.body["ts"] == message["ts"])
    assert closed.body["text"].endswith("Answered: Allow once")
    assert [b["type"] for b in closed.body["blocks"]] == ["section"]  # the buttons are gone
    await turn.play(frames[asking + 1 :])
    assert turn.renderer.turn is None


async def test_buttons_keep_working_after_a_restart():
    async with FakeSlack() as fake:
        frames = load_fixture("approval.jsonl")
        asking = next(i for i, f in enumerate(frames) if f.type == "agent.interaction.request")
        async with running_app(fake) as bot:
            first = await new_turn(fake, bot)
            await first.user_says("run the tests")
            await first.play(frames[: asking + 1])
            posted = fake.calls("chat.postMessage")[-1]
        hooks = RecordingHooks()
        async with running_app(fake, hooks) as restarted:
            allow = posted.body["blocks"][1]["elements"][0]
            message = posted.response["message"]
            click = fake.world.block_actions(allow["action_id"], allow["value"], message=message)
            assert (await fake.post_interactive_to(restarted.http_url, click)).status == 200
            note = await fake.wait_for_call("chat.postEphemeral")
            assert note.body["text"] == "That question was already answered."
            [(_, stale)] = hooks.of("stale")
            assert (stale.interaction_id, stale.choice.option_id) == ("perm-1", "allow")
            assert stale.invocation.conversation == first.conversation
            # The replayed request re-opens the prompt; the old button answers it.
            second = Turn(fake, restarted, first.conversation.thread_id)
            await second.user_says("run the tests")
            await second.play(frames[: asking + 1])
            assert (await fake.post_interactive_to(restarted.http_url, click)).status == 200
            assert (await second.sent.next()).payload.option_id == "allow"
            await second.play(frames[asking + 1 :])


async def test_a_free_text_question_is_answered_through_a_modal(slack_turn):
    from tests.gateway.support import frame

    turn, fake = slack_turn, slack_turn.fake
    await turn.user_says("deploy")
    await turn.play(
        [
            frame("session.turn.start", {"turn_id": "t-q", "prompt_message_id": PROMPT}, "t-q"),
            frame(
                "agent.interaction.request",
                {"interaction_id": "q-1", "kind": "input", "prompt": "Which branch?"},
                "t-q",
            ),
        ]
    )
    posted = fake.calls("chat.postMessage")[-1]
    [button] = posted.body["blocks"][1]["elements"]
    assert button["text"]["text"] == "Answer…"
    click = fake.world.block_actions(
        button["action_id"], button["value"], message=posted.response["message"]
    )
    await fake.post_interactive_to(turn.bot.http_url, click)
    view = (await fake.wait_for_call("views.open")).body["view"]
    assert view["blocks"][0]["label"]["text"] == "Which branch?"
    values = {"answer": {"answer_text": {"type": "plain_text_input", "value": "release/2.0"}}}
    submit = fake.world.view_submission(
        view["callback_id"], values, private_metadata=view["private_metadata"]
    )
    assert (await fake.post_interactive_to(turn.bot.http_url, submit)).status == 200
    answer = await turn.sent.next()
    assert answer.payload == InteractionResponse(interaction_id="q-1", text="release/2.0")
    await turn.renderer.close()  # the turn never ends here: stop its typing
