"""A reloaded page, or a second tab, shows the conversation again (issue 28 §1): the page asks
the stream from the start, the master replays, the reader's own prompts come back from the
web edge and stand above the turns they started; every earlier prompt and answer is shown
exactly once, in order; a turn still running goes on below; no status line comes back from
the replay (U-31). The stand-in plays the master and the web edge (spa_server, `replay`);
tests/web/test_live.py reloads against a real `rawp up`."""

from __future__ import annotations

from tests.web.spa_server import SESSION_ID, dps

FROM_START = "00000000-0000-0000-0000-000000000000"
BUBBLES = """() => [...document.querySelectorAll('#transcript-content .bubble')]
  .filter((n) => !n.hidden)
  .map((n) => [n.classList.contains('user') ? 'user' : 'agent', n.textContent])"""


def ask(page, spa_server, text: str) -> dict:
    page.fill("#composer", text)
    page.click("#send")
    return spa_server.wait_frame("control.prompt.request", prompt_text=text)


def state(turn: str, current: str, previous: str | None = None) -> dict:
    return dps("agent.state.changed", {"previous_state": previous, "current_state": current}, turn)


def start(spa_server, turn: str, prompt_id: str, text: str) -> None:
    spa_server.send(
        dps("session.turn.start", {"turn_id": turn, "prompt_message_id": prompt_id}, turn),
        state(turn, "thinking", "idle"),
        dps("agent.text.delta", {"content_index": 0, "text": text}, turn),
    )


def end(spa_server, turn: str) -> None:
    spa_server.send(
        state(turn, "idle", "thinking"),
        dps("session.turn.end", {"turn_id": turn, "stop_reason": "end_turn"}, turn),
    )


def wait_bubbles(page, expected: list[list[str]]) -> None:
    try:
        page.wait_for_function(
            f"(want) => JSON.stringify(({BUBBLES})()) === JSON.stringify(want)", arg=expected
        )
    except Exception as exc:
        raise AssertionError(f"transcript {page.evaluate(BUBBLES)} is not {expected}") from exc


def reopen(page, spa_server, connects: int) -> None:
    page.reload()
    page.wait_for_selector(f"#session[data-session-id='{SESSION_ID}']")
    spa_server.wait_connects(connects)


def asked_from_the_start(spa_server) -> bool:
    """The page's last connect asked for everything (a cursor no buffer knows)."""
    return spa_server.connects[-1].get("last_message_id") == FROM_START


def test_a_reload_after_the_turns_shows_each_prompt_and_answer_once_in_order(
    session_page, spa_server
):
    page = session_page
    spa_server.replay = True
    first = ask(page, spa_server, "first question")
    start(spa_server, "t1", first["message_id"], "first answer")
    end(spa_server, "t1")
    second = ask(page, spa_server, "second question")
    start(spa_server, "t2", second["message_id"], "second answer")
    end(spa_server, "t2")
    conversation = [
        ["user", "first question"],
        ["agent", "first answer"],
        ["user", "second question"],
        ["agent", "second answer"],
    ]
    wait_bubbles(page, conversation)
    reopen(page, spa_server, 2)
    wait_bubbles(page, conversation)
    assert asked_from_the_start(spa_server)
    assert page.locator("#status-line").is_hidden()  # U-31: nothing of the replayed states
    assert page.locator("#transcript .notice").count() == 0
    # A second tab opened now shows the same conversation.
    other = page.context.new_page()
    other.goto(f"{spa_server.url}/#/session/{SESSION_ID}")
    spa_server.wait_connects(3)
    wait_bubbles(other, conversation)
    other.close()


def test_a_reload_mid_turn_replays_it_and_the_live_turn_goes_on_below(session_page, spa_server):
    page = session_page
    spa_server.replay = True
    first = ask(page, spa_server, "first question")
    start(spa_server, "t1", first["message_id"], "first answer")
    end(spa_server, "t1")
    second = ask(page, spa_server, "second question")
    start(spa_server, "t2", second["message_id"], "half of it, ")
    page.locator("#status-line").wait_for(state="visible")
    reopen(page, spa_server, 2)
    so_far = [["user", "first question"], ["agent", "first answer"], ["user", "second question"]]
    wait_bubbles(page, [*so_far, ["agent", "half of it, "]])
    assert asked_from_the_start(spa_server)
    assert page.locator("#status-line").is_hidden()  # U-31: the replayed `thinking` is not shown
    # The turn goes on live: into the same bubble, and its live state is shown again.
    spa_server.send(
        state("t2", "tool_calling", "thinking"),
        dps("agent.text.delta", {"content_index": 0, "text": "then the rest"}, "t2"),
    )
    wait_bubbles(page, [*so_far, ["agent", "half of it, then the rest"]])
    page.locator("#status-line[data-state='tool_calling']").wait_for()
    assert page.locator("#cancel").is_enabled()  # the running turn can still be stopped
    end(spa_server, "t2")
    page.locator("#status-line").wait_for(state="hidden")
    # A prompt sent from the reloaded page is shown once, not again when its turn starts.
    third = ask(page, spa_server, "third question")
    start(spa_server, "t3", third["message_id"], "third answer")
    end(spa_server, "t3")
    wait_bubbles(
        page,
        [
            *so_far,
            ["agent", "half of it, then the rest"],
            ["user", "third question"],
            ["agent", "third answer"],
        ],
    )


def test_a_prompt_sent_from_another_tab_stands_above_its_live_turn(session_page, spa_server):
    page = session_page
    spa_server.replay = True
    page.wait_for_function(
        "() => window.rawpView.prompts.loads >= 1 && !window.rawpView.prompts.loading"
    )
    # Sent in another tab after this page read the prompts: its turn starts live here.
    spa_server.other_prompts.append(
        {"message_id": "other-tab-1", "text": "asked in another tab", "sent_at": 0}
    )
    start(spa_server, "t1", "other-tab-1", "the answer")
    end(spa_server, "t1")
    # A turn started from Slack: no prompt of this reader's, so no bubble (and no empty one).
    start(spa_server, "t2", "slack-message-1", "an answer to Slack")
    end(spa_server, "t2")
    wait_bubbles(
        page,
        [
            ["user", "asked in another tab"],
            ["agent", "the answer"],
            ["agent", "an answer to Slack"],
        ],
    )
    page.wait_for_function("() => window.rawpView.prompts.waiting.size === 0")
    assert page.locator(".bubble.user").count() == 1
