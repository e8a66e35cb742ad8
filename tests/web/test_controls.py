"""The session's mode buttons and Compact in Chromium (issue 30 §1): a button per mode the
agent's capabilities offer, pressed as the agent's `current_mode` says (not on the click);
a click sends `control.mode.set` with the mode's id; Compact appears while the agent publishes
a `compact` command and sends `control.context.compact`."""

from tests.web.spa_server import dps

MODES = [
    {"id": "default", "name": "Ask before edits"},
    {"id": "acceptEdits", "name": "Accept edits"},
    {"id": "plan", "name": "Plan"},
]


def pressed(page) -> list[str]:
    return page.eval_on_selector_all(
        "#modes .mode[aria-pressed=true]", "nodes => nodes.map(n => n.textContent)"
    )


def test_mode_buttons_follow_the_agent_and_send_control_mode_set(session_page, spa_server):
    page = session_page
    assert page.locator("#modes").is_hidden()  # no modes known yet
    assert page.locator("#compact").is_hidden()
    spa_server.send(dps("session.capabilities", {"modes": MODES, "current_mode": "default"}))
    page.locator("#modes .mode").first.wait_for()
    assert page.locator("#modes .mode").all_inner_texts() == [m["name"] for m in MODES]
    assert pressed(page) == ["Ask before edits"]

    page.click("#modes .mode[data-mode=plan]")
    frame = spa_server.wait_frame("control.mode.set")
    assert frame["payload"] == {"mode": "plan"}
    assert pressed(page) == ["Ask before edits"]  # until the agent says it switched
    spa_server.send(dps("session.capabilities", {"modes": MODES, "current_mode": "plan"}))
    page.wait_for_function(
        "() => document.querySelector('#modes .mode[data-mode=plan]')"
        ".getAttribute('aria-pressed') === 'true'"
    )
    assert pressed(page) == ["Plan"]


def test_compact_is_offered_with_the_agents_compact_command(session_page, spa_server):
    page = session_page
    spa_server.send(dps("agent.commands.publish", {"commands": [{"name": "review"}]}))
    spa_server.send(dps("agent.commands.publish", {"commands": [{"name": "compact"}]}))
    page.locator("#compact").wait_for(state="visible")
    page.click("#compact")
    frame = spa_server.wait_frame("control.context.compact")
    assert frame["payload"] == {}
    spa_server.send(dps("agent.commands.publish", {"commands": [{"name": "review"}]}))
    page.locator("#compact").wait_for(state="hidden")
