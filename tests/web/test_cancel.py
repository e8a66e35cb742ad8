"""The cancel bubble (U-32…U-36) in Chromium."""

from tests.web.spa_server import FRAME, dps

T = "turn-1"


def test_cancel_inserts_the_system_bubble_at_once_and_keeps_partial_text(session_page, spa_server):
    page = session_page
    spa_server.send(
        dps("session.turn.start", {"turn_id": T, "prompt_message_id": "p"}, T),
        dps("agent.text.delta", {"content_index": 0, "text": "Partial answer so far"}, T),
        dps("agent.state.changed", {"current_state": "thinking"}, T),
    )
    page.locator("#status-line").wait_for(state="visible")
    page.click("#cancel")
    # U-34: the bubble is there before any session.turn.end (none has been sent).
    bubble = page.locator(".system-bubble")
    bubble.wait_for()
    assert "⏹" in bubble.inner_text()
    frame = spa_server.wait_frame("control.prompt.cancel")
    assert frame["payload"]["turn_id"] == T  # U-32
    # U-34/U-35: directly below the agent's partial text, which stays.
    order = page.evaluate(
        "() => [...document.getElementById('transcript-content').children].map(e => e.className)"
    )
    assert order[-2:] == ["bubble agent", "system-bubble"]
    assert page.locator(".bubble.agent").inner_text() == "Partial answer so far"
    # U-36: the status line is gone at once.
    assert page.locator("#status-line").is_hidden()
    # U-33: styled apart — centred, smaller, no background.
    look = page.evaluate("""() => {
      const s = getComputedStyle(document.querySelector('.system-bubble'));
      const a = getComputedStyle(document.querySelector('.bubble.agent'));
      return [s.alignSelf, parseFloat(s.fontSize) < parseFloat(a.fontSize),
              s.backgroundColor, s.display];
    }""")
    assert look[0] == "center" and look[1] and look[2] == "rgba(0, 0, 0, 0)" and look[3] != "none"
    # The turn's end confirms it: still one bubble; late output of the turn stays above it.
    spa_server.send(
        dps("agent.text.delta", {"content_index": 1, "text": "late words"}, T),
        dps("agent.state.changed", {"current_state": "idle"}, T),
        dps("session.turn.end", {"turn_id": T, "stop_reason": "cancelled", "duration_ms": 5}, T),
    )
    page.wait_for_function("() => document.getElementById('cancel').disabled")
    page.evaluate(FRAME)  # the frames before the turn's end were handled; one more frame drawn
    assert page.locator(".system-bubble").count() == 1
    assert "late words" not in page.locator("#transcript").inner_text()
    assert page.locator("#status-line").is_hidden()


def test_a_page_opened_mid_turn_can_stop_it(session_page, spa_server):
    page = session_page
    # No session.turn.start reached this page: it opened while the turn ran.
    spa_server.send(dps("agent.text.delta", {"content_index": 0, "text": "Half"}, "turn-9"))
    page.wait_for_function("() => !document.getElementById('cancel').disabled")
    page.click("#cancel")
    frame = spa_server.wait_frame("control.prompt.cancel")
    assert frame["payload"]["turn_id"] == "turn-9"
    page.locator(".system-bubble").wait_for()
