"""The status line (U-24…U-31) and the reconnect with the last message id, in Chromium."""

from tests.web.spa_server import FRAME, dps

T = "turn-1"


def state(current, previous=None):
    return dps("agent.state.changed", {"previous_state": previous, "current_state": current}, T)


def status_text(page):
    return page.locator("#status-line .status-text").inner_text()


def test_one_status_line_updated_in_place_and_gone_at_turn_end(session_page, spa_server):
    page = session_page
    spa_server.send(dps("session.turn.start", {"turn_id": T, "prompt_message_id": "p"}, T))
    spa_server.send(state("thinking", "idle"))
    line = page.locator("#status-line")
    line.wait_for(state="visible")
    page.evaluate("() => { window.statusNode = document.getElementById('status-line'); }")
    page.wait_for_function("() => window.statusNode.textContent.includes('Thinking')")
    # U-28: the tool named by tool.invoke.request.
    page.wait_for_timeout(350)  # a quiet spell: the next change cross-fades (U-29)
    page.evaluate("""() => {
      window.fades = 0;
      new MutationObserver(() => {
        if (window.statusNode.classList.contains('swapping')) window.fades += 1;
      }).observe(window.statusNode, {attributes: true, attributeFilter: ['class']});
    }""")
    spa_server.send(
        dps(
            "tool.invoke.request",
            {"invocation_id": "c1", "tool_name": "Edit", "input": {"file_path": "src/auth.ts"}},
            T,
        ),
        state("tool_calling", "thinking"),
    )
    page.wait_for_function("() => window.statusNode.textContent.includes('Running: Edit')")
    # U-29: a change after a quiet spell cross-fades (the line dims, then shows the new text).
    assert page.evaluate("() => window.fades") >= 1
    assert status_text(page) == "Running: Edit (src/auth.ts)…"
    # U-27: tool_calling has a rotating spinner.
    assert (
        page.locator("#status-line .status-icon").evaluate("e => getComputedStyle(e).animationName")
        == "spin"
    )
    # U-25: the same element, updated in place; U-24/U-26: outside the transcript.
    assert page.evaluate("() => document.getElementById('status-line') === window.statusNode")
    assert page.locator("#status-line").count() == 1
    assert page.locator("#transcript #status-line").count() == 0
    # U-29: a burst of changes lands at once on the last one, no queue of fades.
    spa_server.send(state("error"))
    page.wait_for_function("() => window.statusNode.dataset.state === 'error'")
    # U-27: error in red.
    assert line.evaluate("e => getComputedStyle(e).color") == "rgb(198, 40, 40)"
    spa_server.send(state("thinking"), state("error"), state("awaiting_input"))
    page.wait_for_function("() => window.statusNode.textContent.includes('Waiting for input')")
    assert line.get_attribute("data-state") == "awaiting_input"
    # U-30: gone at the turn's end, and no trace of the states in the history.
    spa_server.send(
        dps("session.turn.end", {"turn_id": T, "stop_reason": "end_turn", "duration_ms": 10}, T)
    )
    line.wait_for(state="hidden")
    transcript = page.locator("#transcript").inner_text()
    for word in ("Thinking", "Running", "Waiting", "Error occurred"):
        assert word not in transcript
    assert page.locator("#transcript .bubble").count() == 0  # U-24: no bubble per state


def test_reconnect_resumes_from_the_last_message_and_replay_shows_no_state(
    session_page, spa_server
):
    page = session_page
    last = dps("agent.text.delta", {"content_index": 0, "text": "before the drop. "}, T)
    spa_server.send(dps("session.turn.start", {"turn_id": T, "prompt_message_id": "p"}, T), last)
    page.wait_for_selector(".bubble.agent")
    # The master link drops: the edge closes with 1012; on reconnect the master replays.
    replayed_state = state("thinking", "idle")
    spa_server.greeting = [
        dps(
            "session.history",
            {"since_message_id": last["message_id"], "replayed": 3, "dropped": 0, "policy": "RING"},
        ),
        last,  # a frame may come twice across the blip: dropped by message_id
        replayed_state,
        dps("agent.text.delta", {"content_index": 0, "text": "after the drop."}, T),
    ]
    spa_server.drop(1012)
    connects = spa_server.wait_connects(2)
    assert connects[1].get("last_message_id") == last["message_id"]
    page.wait_for_function(
        "() => document.querySelector('.bubble.agent').textContent.includes('after the drop')"
    )
    page.evaluate(FRAME)  # every replayed frame was handled before that text; one frame drawn
    # U-31: a replayed agent.state.changed is not shown.
    assert page.locator("#status-line").is_hidden()
    assert page.locator(".bubble.agent").inner_text() == "before the drop. after the drop."
    # The live state after the replay is shown again.
    spa_server.send(state("tool_calling", "thinking"))
    page.locator("#status-line").wait_for(state="visible")
    assert status_text(page) == "Running tool…"


def test_a_tool_request_in_the_same_tick_as_tool_calling_names_the_tool_once(
    session_page, spa_server
):
    # Issue 28 §2: after a quiet spell the change to tool_calling cross-fades; the request that
    # follows at once used to be dropped (the label was chosen before the fade), and a title
    # `Edit src/app.py` read `Running: Edit (Edit src/app.py)…`.
    page = session_page
    spa_server.send(dps("session.turn.start", {"turn_id": T, "prompt_message_id": "p"}, T))
    spa_server.send(state("thinking", "idle"))
    page.wait_for_function(
        "() => document.getElementById('status-line').dataset.state === 'thinking'"
    )
    page.wait_for_timeout(350)  # a quiet spell, so that the next change cross-fades (U-29)
    spa_server.send(
        state("tool_calling", "thinking"),
        dps(
            "tool.invoke.request",
            {
                "invocation_id": "c1",
                "tool_name": "Edit",
                "input": {"path": "src/app.py"},
                "title": "Edit src/app.py",
            },
            T,
        ),
    )
    page.wait_for_function(
        "() => document.getElementById('status-line').dataset.state === 'tool_calling'"
        " && !document.getElementById('status-line').classList.contains('swapping')"
    )
    assert status_text(page) == "Running: Edit (src/app.py)…"
    # The next tool's request while tool_calling stays shown updates the line in place.
    spa_server.send(
        dps("tool.invoke.request", {"invocation_id": "c2", "tool_name": "Bash",
                                    "input": {"command": "npm test"}}, T)
    )  # fmt: skip
    page.wait_for_function(
        "() => document.querySelector('#status-line .status-text').textContent"
        " === 'Running: Bash (npm test)…'"
    )


def usage(used: int, window: int = 200_000):
    return dps("session.usage", {"context_tokens": used, "context_window": window}, T)


def test_context_use_is_one_header_element_with_one_warning_and_a_compaction_notice(
    session_page, spa_server
):
    """Issue 30 §4 on the web edge: the context share updated in place in the header, a warning
    from 80 % once per crossing, a compaction notice with its sizes."""
    page = session_page
    meter = page.locator("#context-use")
    assert meter.is_hidden()  # nothing reported yet
    spa_server.send(usage(124_000))
    page.wait_for_function("() => document.getElementById('context-use').textContent !== ''")
    assert meter.inner_text() == "context 62%" and meter.get_attribute("data-level") == "ok"
    spa_server.send(usage(170_000), usage(180_000))
    page.wait_for_function(
        "() => document.getElementById('context-use').textContent === 'context 90%'"
    )
    assert meter.get_attribute("data-level") == "warn"
    warnings = page.locator("#transcript-content .notice.warning")
    assert warnings.all_inner_texts() == [
        "⚠ context 85% — compact it or start a new session soon"
    ]  # once per crossing, not per report
    compacted = {"before_tokens": 180_000, "after_tokens": 12_000}
    spa_server.send(dps("session.context.compacted", compacted, T))
    page.wait_for_selector("#transcript-content .notice.meta")
    notices = page.locator("#transcript-content .notice.meta").all_inner_texts()
    assert notices == ["Context compacted (180,000 → 12,000 tokens)."]
    assert meter.is_hidden()
