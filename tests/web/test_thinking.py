"""Thinking containers (U-11…U-23) in Chromium."""

import re

from tests.web.spa_server import dps

T = "turn-1"


def think(server, index, text):
    server.send(dps("agent.thinking.delta", {"content_index": index, "text": text}, T))


def done(server, index, **payload):
    server.send(dps("agent.thinking.done", {"content_index": index, **payload}, T))


def test_thinking_lifecycle(session_page, spa_server):
    page = session_page
    spa_server.send(dps("session.turn.start", {"turn_id": T, "prompt_message_id": "p"}, T))
    think(spa_server, 0, "Let me look at the parser.")
    first = page.locator(".thinking[data-content-index='0']")
    first.wait_for()
    # U-12/U-13/U-14: active, pulsing slowly (1.5–3 s), forever, until done.
    assert "active" in first.get_attribute("class")
    style = first.evaluate(
        "e => { const s = getComputedStyle(e); return [s.animationName, s.animationDuration,"
        " s.animationIterationCount]; }"
    )
    assert style[0] != "none"
    assert 1.5 <= float(style[1].rstrip("s")) <= 3.0, style
    assert style[2] == "infinite"
    # U-15: the label, with elapsed seconds. U-16: summary mode by default (body hidden).
    assert re.fullmatch(r"🧠 Thinking… \d+s", first.locator(".thinking-label").inner_text())
    assert first.locator(".thinking-body").is_hidden()
    # U-11: set apart from response text.
    spa_server.send(dps("agent.text.delta", {"content_index": 1, "text": "Answer."}, T))
    page.wait_for_selector(".bubble.agent")
    bg = page.evaluate(
        "() => [getComputedStyle(document.querySelector('.thinking')).backgroundColor,"
        " getComputedStyle(document.querySelector('.bubble.agent')).backgroundColor]"
    )
    assert bg[0] != bg[1]
    # U-23: a second thinking block: never two active indicators.
    think(spa_server, 2, "Now the lexer.")
    page.wait_for_selector(".thinking[data-content-index='2'].active")
    assert page.locator(".thinking.active").count() == 1
    # U-17…U-19: done stops the pulse at once and collapses to "Thought for Ns".
    done(spa_server, 2, redacted=False, duration_ms=4200)
    second = page.locator(".thinking[data-content-index='2']")
    page.wait_for_selector(".thinking[data-content-index='2'].collapsed")
    assert second.evaluate("e => getComputedStyle(e).animationName") == "none"  # U-18
    assert second.locator(".thinking-label").inner_text() == "🧠 Thought for 4s"
    assert page.locator(".thinking.active").count() == 0
    # The summary expands on click.
    second.locator(".thinking-label").click()
    assert second.locator(".thinking-body").inner_text() == "Now the lexer."


def test_live_mode_collapse_is_animated_within_300_ms(session_page, spa_server):
    page = session_page
    page.check("#thinking-live")
    spa_server.send(dps("session.turn.start", {"turn_id": T, "prompt_message_id": "p"}, T))
    think(spa_server, 0, "".join(f"step {i}\n" for i in range(12)))
    body = page.locator(".thinking .thinking-body")
    body.wait_for()
    # U-16 real-time mode: the body streams visibly.
    assert "step 11" in body.inner_text()
    assert body.evaluate("e => e.offsetHeight") > 100
    # The transition is read from the Web Animations API when the collapse starts: exact,
    # where sampling frames would depend on how busy the machine is.
    page.evaluate("""() => {
      const node = document.querySelector('.thinking');
      const body = node.querySelector('.thinking-body');
      window.collapse = null;
      new MutationObserver(() => {
        if (window.collapse || !node.classList.contains('collapsing')) return;
        window.collapse = {
          transitions: body.getAnimations().map(a => [a.transitionProperty,
                                                       a.effect.getTiming().duration]),
        };
      }).observe(node, {attributes: true, attributeFilter: ['class']});
    }""")
    done(spa_server, 0, redacted=False)
    page.wait_for_function("() => window.collapse !== null")
    collapse = page.evaluate("() => window.collapse")
    durations = dict(collapse["transitions"])
    # U-20: height collapses and opacity fades, each in 150–300 ms.
    assert 150 <= durations.get("height", 0) <= 300, collapse
    assert 150 <= durations.get("opacity", 0) <= 300, collapse
    page.wait_for_selector(".thinking.collapsed:not(.collapsing)")
    assert body.is_hidden()


def test_redacted_thinking_shows_a_placeholder_and_cannot_expand(session_page, spa_server):
    page = session_page
    spa_server.send(dps("session.turn.start", {"turn_id": T, "prompt_message_id": "p"}, T))
    think(spa_server, 0, "secret chain of thought")
    page.wait_for_selector(".thinking.active")
    done(spa_server, 0, redacted=True)
    block = page.locator(".thinking.collapsed")
    block.wait_for()
    # U-22: the placeholder replaces the text; nothing of the text remains in the page.
    assert "secret" not in page.locator("#transcript").evaluate("e => e.textContent")
    assert "사고 내용 생략" in block.locator(".thinking-body").evaluate("e => e.textContent")
    block.locator(".thinking-label").click(force=True)
    assert "expanded" not in block.get_attribute("class")
    assert block.locator(".thinking-body").is_hidden()
