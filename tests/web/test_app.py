"""The SPA's frame: sign-in state, lists, the usage chart, text rendering (U-03, U-10)."""

from datetime import timedelta

import pytest

from tests.web.page_log import open_page
from tests.web.spa_server import NODE_ID, SESSION_ID, TODAY, USAGE, dps

T = "turn-1"


def test_signed_out_shows_the_sign_in_notice(page, spa_server):
    spa_server.signed_in = False
    page.goto(spa_server.url + "/")
    page.wait_for_selector("#signin-needed", state="visible")
    assert page.locator("#app").is_hidden()


def test_lists_and_usage_chart(page, spa_server):
    page.goto(spa_server.url + "/")
    page.wait_for_selector(f".session-item[data-session-id='{SESSION_ID}']")
    assert page.locator("#nodes li").count() == 1
    assert page.locator("#new-session select[name=agent_name] option").all_inner_texts() == ["demo"]
    bars = page.locator("#usage svg rect.usage-bar")
    assert bars.count() == 2
    heights = [float(b.get_attribute("height")) for b in bars.all()]
    assert heights[0] > heights[1]  # 1500 tokens against 1000


def test_one_day_of_usage_keeps_its_slot_among_the_fourteen(page, spa_server):
    # Issue 28 §2: one day of usage was drawn as one bar the chart's full width. The newest
    # day is tomorrow, so that it is the last slot even if the page's clock passes midnight.
    newest = (TODAY + timedelta(days=1)).isoformat()
    three_before = (TODAY - timedelta(days=2)).isoformat()
    spa_server.usage = [{**USAGE[1], "date": newest}]
    page.goto(spa_server.url + "/")
    bar = page.locator("#usage svg rect.usage-bar")
    bar.wait_for()
    slot = 240 / 14  # the chart's viewBox width over its fourteen days
    assert float(bar.get_attribute("width")) < slot
    assert float(bar.get_attribute("x")) == pytest.approx(13 * slot + 1)  # the last slot
    # Days apart stay apart: three days between them, three slots between their bars.
    spa_server.usage = [{**USAGE[0], "date": three_before}, {**USAGE[1], "date": newest}]
    page.reload()
    page.locator("#usage svg rect.usage-bar").nth(1).wait_for()
    xs = [float(b.get_attribute("x")) for b in page.locator("#usage svg rect.usage-bar").all()]
    assert xs[1] - xs[0] == pytest.approx(3 * slot)


def test_text_streams_per_content_index_and_never_becomes_markup(session_page, spa_server):
    page = session_page
    spa_server.send(dps("session.turn.start", {"turn_id": T, "prompt_message_id": "p"}, T))
    # U-03: each delta shows as soon as it arrives.
    spa_server.send(dps("agent.text.delta", {"content_index": 0, "text": "Hello **wor"}, T))
    bubble = page.locator(".bubble.agent[data-content-index='0']")
    bubble.wait_for()
    # U-10: an unclosed ** stays literal text until it closes; nothing below turns bold.
    assert bubble.inner_text() == "Hello **wor"
    assert bubble.locator("strong").count() == 0
    spa_server.send(
        dps("agent.text.delta", {"content_index": 0, "text": "ld** <b>x</b>\n```py\nx = 1"}, T)
    )
    page.wait_for_selector(".bubble.agent strong")
    assert bubble.locator("strong").inner_text() == "world"
    assert bubble.locator("b").count() == 0  # HTML in agent text is shown, never parsed
    assert "<b>x</b>" in bubble.inner_text()
    # U-09/U-10: the open fence is an open code block with its reserved minimum height.
    code = bubble.locator("pre.code-block.open")
    assert code.inner_text() == "x = 1"
    assert code.evaluate("e => parseFloat(getComputedStyle(e).minHeight)") >= 40
    spa_server.send(dps("agent.text.delta", {"content_index": 1, "text": "second"}, T))
    page.wait_for_selector(".bubble.agent[data-content-index='1']")
    assert page.locator(".bubble.agent").count() == 2


def test_new_session_form_posts_and_opens_the_session(page, spa_server):
    page.goto(spa_server.url + "/")
    page.wait_for_selector("#new-session select[name=agent_name] option", state="attached")
    page.fill("#new-session input[name=workspace_path]", "/home/me/project")
    page.click("#new-session button[type=submit]")
    page.wait_for_selector(f"#session[data-session-id='{SESSION_ID}']")
    spa_server.wait_connects(1)
    assert spa_server.created == [
        {"node_id": NODE_ID, "agent_name": "demo", "workspace_path": "/home/me/project"}
    ]
    page.click("#end-session")
    page.wait_for_selector("#session", state="hidden")
    assert spa_server.deleted == [SESSION_ID]


def test_a_page_that_does_not_open_says_what_it_waited_for(page, spa_server):
    """tests/web/page_log.py: the app's script held back (a route that never answers), the
    failure names it as still awaited."""
    page.route("**/static/app.js", lambda route: None)  # never continued nor fulfilled
    with pytest.raises(AssertionError) as failure:
        open_page(page, f"{spa_server.url}/#/session/{SESSION_ID}", "#session", timeout_ms=3000)
    told = str(failure.value)
    assert "still waited for 1 request(s)" in told and "/static/app.js (asked at" in told
