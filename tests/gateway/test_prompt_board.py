"""The gateway's prompt board: adapters push presses, the gateway's wait takes them."""

from __future__ import annotations

import asyncio

from gateway.approvals.prompt_board import MAX_PENDING_ANSWERS, PromptBoard, option_of
from gateway.platform import Choice, ChoiceOption, ConversationRef, InteractionPrompt, MessageRef

HERE = ConversationRef("test", "C1", "T1")
PROMPT = InteractionPrompt("i-1", "approval", "Run it?", (ChoiceOption("yes", "Yes"),))


async def test_a_pushed_press_reaches_the_wait_on_the_posted_message():
    board = PromptBoard()
    posted = MessageRef(HERE, "m1")
    board.open("T1", PROMPT, posted, "❓ Run it?")
    waiting = asyncio.create_task(board.wait(posted, 5))
    await asyncio.sleep(0)
    assert board.answer("T1", "i-1", Choice("U1", option_id="yes"))
    assert await waiting == Choice("U1", option_id="yes")


async def test_a_repost_answers_the_same_wait_and_closing_ends_the_prompt():
    board = PromptBoard()
    first, again = MessageRef(HERE, "m1"), MessageRef(HERE, "m2")
    board.open("T1", PROMPT, first, "❓ Run it?")
    board.open("T1", PROMPT, again, "❓ Run it?")  # re-posted after a reconnect
    board.answer("T1", "i-1", Choice("U2", text="ok"))
    assert await board.wait(first, 1) == Choice("U2", text="ok")
    closed = board.close(again)
    assert closed is not None and closed.text == "❓ Run it?"
    assert not board.answer("T1", "i-1", Choice("U2", option_id="yes"))  # stale now
    assert await board.wait(first, 1) is None  # no prompt open: no wait


async def test_no_answer_in_time_is_none_and_other_conversations_do_not_answer():
    board = PromptBoard()
    posted = MessageRef(HERE, "m1")
    board.open("T1", PROMPT, posted, "❓")
    assert not board.answer("T2", "i-1", Choice("U1", option_id="yes"))
    assert await board.wait(posted, 0.01) is None


async def test_a_flood_of_presses_is_bounded():
    board = PromptBoard()
    posted = MessageRef(HERE, "m1")
    board.open("T1", PROMPT, posted, "❓")
    for _ in range(MAX_PENDING_ANSWERS + 3):
        assert board.answer("T1", "i-1", Choice("U1", option_id="yes"))
    assert board.find("T1", "i-1").answers.qsize() == MAX_PENDING_ANSWERS


def test_an_index_names_the_option_it_stands_for():
    assert option_of(PROMPT, "#0") == "yes"
    assert option_of(PROMPT, "#7") == "#7"  # out of range: left as it came
    assert option_of(PROMPT, "no") == "no"
    assert option_of(None, "#0") == "#0"
