"""The SPA's frame: sign-in state, lists, the usage chart, text rendering (U-03, U-10)."""

from tests.web.spa_server import NODE_ID, SESSION_ID, dps

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
