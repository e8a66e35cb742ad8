"""Recorded turns rendered by the real renderer onto the real Discord adapter (fake Discord)."""

from __future__ import annotations

import re

import pytest

from gateway.platform import ConversationRef, MessageRef
from gateway.rendering.chunker import fence_after
from gateway.rendering.render import RenderOptions, SessionRenderer
from rawp.events import InteractionResponse
from tests.adapters.chat_support import RecordingHooks
from tests.adapters.discord_support import running_bot
from tests.fakes.discord_server import FakeDiscord
from tests.gateway.fixtures.build import PROMPT, SESSION
from tests.gateway.support import Recorder, load_fixture


class Turn:
    """A thread, the user's message in it, and a renderer drawing on the Discord platform."""

    def __init__(self, fake: FakeDiscord, bot, thread: dict) -> None:
        self.fake, self.bot = fake, bot
        self.conversation = ConversationRef("discord", fake.world.channel_id, thread["id"])
        self.sent = Recorder()
        self.renderer = SessionRenderer(
            bot.platform, self.conversation, SESSION, send_frame=self.sent
        )

    async def user_says(self, text: str) -> MessageRef:
        message = await self.fake.inject_message(text, channel_id=self.conversation.thread_id)
        ref = MessageRef(self.conversation, message["id"])
        self.renderer.expect_prompt(PROMPT, ref, self.fake.world.alice["id"])
        return ref

    async def play(self, frames) -> None:
        for frame in frames:
            await self.renderer.feed(frame)

    def channel_writes(self) -> list[tuple[str, str, object]]:
        prefix = f"/channels/{self.conversation.thread_id}"
        return [
            (c.method, c.path.removeprefix(prefix), c.body)
            for c in self.fake.log
            if c.method in ("POST", "PUT", "PATCH", "DELETE") and c.path.startswith(prefix)
        ]


@pytest.fixture
async def turn():
    async with FakeDiscord() as fake:
        thread = await fake.add_thread("session 1")
        hooks = RecordingHooks()
        async with running_bot(fake, hooks) as bot:
            yield Turn(fake, bot, thread)


async def test_a_rendered_turn_is_typing_hourglass_lines_diff_and_check(turn):
    user = await turn.user_says("fix auth")
    await turn.play(load_fixture("tool_diff.jsonl"))
    writes = turn.channel_writes()
    mid = user.message_id
    kinds = [(m, p) for m, p, _ in writes]
    assert kinds[0] == ("POST", "/typing")  # G-NS-04: typing at once
    assert kinds[-1] == ("PUT", f"/messages/{mid}/reactions/✅/@me")
    # A turn this quick never gets ⏳ (gateway.rendering.working_mark; test_render pins ⏳ → ✅).
    assert not [k for k in kinds if "⏳" in k[1]]
    posts = [body["content"] for m, p, body in writes if (m, p) == ("POST", "/messages")]
    assert posts[0].startswith("✅ Edit (src/auth.ts)")
    assert "```diff\n" in posts[0] and "-  return true\n+  return check(t.exp)" in posts[0]
    assert all(fence_after(None, text) is None for text in posts)


async def test_a_long_answer_is_chunked_with_balanced_fences_in_order(turn):
    await turn.user_says("rewrite score()")
    await turn.play(load_fixture("long_answer.jsonl"))
    posts = [
        body["content"] for m, p, body in turn.channel_writes() if (m, p) == ("POST", "/messages")
    ]
    assert len(posts) >= 3 and all(len(text) <= 2000 for text in posts)
    assert all(fence_after(None, text) is None for text in posts)  # every chunk's fences balanced
    code_chunks = [text for text in posts if "total += weight" in text]
    assert len(code_chunks) >= 2  # the long code block was split and its fence reopened
    assert all(text.count("```python") == 1 for text in code_chunks)
    steps = [int(n) for text in posts for n in re.findall(r"# step (\d+)", text)]
    assert steps == sorted(set(steps))  # nothing lost twice or reordered


async def test_a_click_by_the_turn_user_answers_and_another_user_is_refused(turn):
    await turn.user_says("run the tests")
    frames = load_fixture("approval.jsonl")
    asking = next(i for i, f in enumerate(frames) if f.type == "agent.interaction.request")
    await turn.play(frames[: asking + 1])
    posts = turn.fake.calls("POST", f"/channels/{turn.conversation.thread_id}/messages")
    prompt = turn.fake.rest.messages[posts[-1].response["id"]]
    buttons = prompt["components"][0]["components"]
    assert [b["label"] for b in buttons] == ["Allow once", "Deny"]
    assert [b["style"] for b in buttons] == [3, 4]  # green allow, red deny
    allow = buttons[0]["custom_id"]
    assert allow == f"rawp:c:{turn.conversation.thread_id}:perm-1:allow"

    bob_click = await turn.fake.inject_button(
        allow, message=prompt, user_payload=turn.fake.world.bob
    )
    assert (await turn.fake.wait_for_interaction_answer(bob_click)).body["type"] == 6
    webhook = f"/webhooks/{turn.fake.world.application_id}/{bob_click['token']}"
    refusal = await turn.fake.wait_for_call("POST", webhook)
    assert refusal.body["flags"] == 64  # ephemeral: only bob sees it
    assert "Only the person who started this turn" in refusal.body["content"]

    alice_click = await turn.fake.inject_button(allow, message=prompt)
    await turn.fake.wait_for_interaction_answer(alice_click)
    answer = await turn.sent.next()
    assert answer.type == "control.interaction.response"
    assert answer.payload == InteractionResponse(interaction_id="perm-1", option_id="allow")
    assert answer.parent_id == frames[asking].message_id
    closed = await turn.fake.wait_for_call("PATCH", f"/channels/**/messages/{prompt['id']}")
    assert closed.body["components"] == []
    assert closed.body["content"].endswith("Answered: Allow once")
    await turn.play(frames[asking + 1 :])
    assert turn.renderer.turn is None


async def test_buttons_keep_working_after_a_restart():
    async with FakeDiscord() as fake:
        thread = await fake.add_thread("session 1")
        async with running_bot(fake) as bot:
            first = Turn(fake, bot, thread)
            await first.user_says("run the tests")
            frames = load_fixture("approval.jsonl")
            asking = next(i for i, f in enumerate(frames) if f.type == "agent.interaction.request")
            await first.play(frames[: asking + 1])
            posts = fake.calls("POST", f"/channels/{thread['id']}/messages")
            old_prompt = fake.rest.messages[posts[-1].response["id"]]
        hooks = RecordingHooks()
        async with running_bot(fake, hooks) as restarted:
            # Nobody waits yet: the click goes to the conversation layer as a stale choice.
            allow = old_prompt["components"][0]["components"][0]["custom_id"]
            click = await fake.inject_button(allow, message=old_prompt)
            answer = await fake.wait_for_interaction_answer(click)
            assert answer.body["type"] == 6  # acknowledged at once: the hook may ask a replica
            webhook = f"/webhooks/{fake.world.application_id}/{click['token']}"
            note = await fake.wait_for_call("POST", webhook, timeout=10)
            assert note.body["flags"] == 64  # the hook's note, to the presser only
            assert "already answered" in note.body["content"]
            [(_, stale)] = hooks.of("stale")
            assert (stale.interaction_id, stale.choice.option_id) == ("perm-1", "allow")
            assert stale.invocation.user_id == fake.world.alice["id"]
            # The session's replayed request re-opens the prompt; the old button answers it.
            second = Turn(fake, restarted, thread)
            await second.user_says("run the tests")
            await second.play(frames[: asking + 1])
            again = await fake.inject_button(allow, message=old_prompt)
            await fake.wait_for_interaction_answer(again)
            response = await second.sent.next()
            assert response.payload.option_id == "allow"
            await second.play(frames[asking + 1 :])


async def test_members_of_an_approver_role_may_answer_a_turn_they_did_not_start():
    async with FakeDiscord() as fake:
        thread = await fake.add_thread("session 1")
        operators = frozenset({fake.world.operator_role_id})
        async with running_bot(fake, approver_roles=operators) as bot:
            conversation = ConversationRef("discord", fake.world.channel_id, thread["id"])
            approvers = await bot.platform.approvers(conversation)
            assert fake.world.alice["id"] in approvers and fake.world.bob["id"] not in approvers
            sent = Recorder()
            renderer = SessionRenderer(
                bot.platform,
                conversation,
                SESSION,
                send_frame=sent,
                options=RenderOptions(approver_ids=approvers),
            )
            bobs = await fake.inject_message(
                "run the tests", channel_id=thread["id"], author=fake.world.bob
            )
            renderer.expect_prompt(
                PROMPT, MessageRef(conversation, bobs["id"]), fake.world.bob["id"]
            )
            frames = load_fixture("approval.jsonl")
            asking = next(i for i, f in enumerate(frames) if f.type == "agent.interaction.request")
            for frame in frames[: asking + 1]:
                await renderer.feed(frame)
            posted = fake.calls("POST", f"/channels/{thread['id']}/messages")[-1]
            prompt = fake.rest.messages[posted.response["id"]]
            deny = prompt["components"][0]["components"][1]["custom_id"]
            await fake.inject_button(deny, message=prompt)  # alice, an operator
            assert (await sent.next()).payload.option_id == "deny"
            for frame in frames[asking + 1 :]:
                await renderer.feed(frame)


async def test_a_free_text_question_is_answered_through_a_modal(turn):
    from tests.gateway.support import frame

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
    posted = turn.fake.calls("POST", f"/channels/{turn.conversation.thread_id}/messages")[-1]
    prompt = turn.fake.rest.messages[posted.response["id"]]
    [button] = prompt["components"][0]["components"]
    assert button["label"] == "Answer…"
    click = await turn.fake.inject_button(button["custom_id"], message=prompt)
    opened = await turn.fake.wait_for_interaction_answer(click)
    assert opened.body["type"] == 9  # a modal
    modal_id = opened.body["data"]["custom_id"]
    assert modal_id == f"rawp:m:{turn.conversation.thread_id}:q-1"
    submit = await turn.fake.inject_modal_submit(
        modal_id, {"rawp:answer": "release/2.0"}, channel_id=turn.conversation.thread_id
    )
    await turn.fake.wait_for_interaction_answer(submit)
    answer = await turn.sent.next()
    assert answer.payload == InteractionResponse(interaction_id="q-1", text="release/2.0")
    await turn.renderer.close()  # the turn never ends here: stop its typing
