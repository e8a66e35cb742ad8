"""The web edge end to end in Chromium (issue 21, "What must hold"): a real `rawp up` prints
a sign-in URL; opening it in the browser signs in, the new-session form starts the demo agent,
a prompt streams into the transcript, the agent's approval is answered with a button in the
page, and the agent goes on with that answer. At turn end the status line is gone and the
thinking has collapsed to its summary. A reload shows the conversation again, and so does one
while the agent waits for the next approval, which is then answered in the reloaded page
(issue 28 §1). The `/` popup then lists the commands the agent published, and `@` finds a
real file of the workspace. Nothing here is a stand-in: `rawp up`
runs as a child process with its master, client, gateway and web edge.
"""

from __future__ import annotations

import re

from tests.up.test_up_web import LINK, start_up
from tests.web.conftest import ARTIFACTS


def test_rawp_up_prints_a_url_that_streams_a_session_and_takes_an_approval(
    browser, processes, tmp_path
):
    _up, lines = start_up(processes, tmp_path)  # ended by the processes fixture
    link = lines._wait(LINK, 90).group(1)
    base = link.split("/login")[0]
    context = browser.new_context(viewport={"width": 1100, "height": 700})
    context.set_default_timeout(30_000)  # a real agent on a busy machine
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(link)  # the one-time link: 303 to the app, with the cookie
        page.wait_for_url(f"{base}/**")
        page.wait_for_selector("#app", state="visible")
        page.wait_for_selector("#new-session select[name=agent_name] option", state="attached")
        page.select_option("#new-session select[name=agent_name]", "demo")
        page.click("#new-session button[type=submit]")
        page.wait_for_selector("#session[data-session-id]")
        session_id = page.get_attribute("#session", "data-session-id")
        assert session_id

        page.fill("#composer", "please approve this")
        page.click("#send")
        page.wait_for_selector(".bubble.user")
        allow = page.locator(".approval button[data-option-id='allow']")
        allow.wait_for()  # the demo agent asks; the page shows its options as buttons
        allow.click()
        # The agent got the answer: it says what was chosen, and the turn ends (no status).
        page.locator("#transcript .bubble.agent", has_text="You chose: allow").wait_for()
        page.wait_for_selector("#status-line", state="hidden")  # U-30: gone at turn end
        assert page.locator(".approval button[data-option-id='allow']").is_disabled()
        # U-19/U-23: the demo agent's thinking collapsed to its summary; none still active.
        assert page.locator(".thinking.active").count() == 0
        assert re.fullmatch(
            r"🧠 Thought for \d+s", page.locator(".thinking .thinking-label").first.inner_text()
        )

        reload_mid_turn_and_after(page)

        # The `/` popup lists the commands the agent published during the turn (G-CMD-01).
        page.fill("#composer", "")
        page.type("#composer", "/rev")
        page.locator("#popup .popup-item", has_text="review").wait_for()
        # `@` searches the live session's workspace (DPS §16): the real file is offered.
        page.fill("#composer", "")
        page.type("#composer", "@mai")
        page.locator("#popup .popup-item", has_text="main.py").wait_for()
    except Exception:
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "test_live.png"), full_page=True)
        raise
    finally:
        context.close()
    assert not errors, f"errors in the page: {errors}"


# The transcript's prompts and answers, in page order, each as (who, first line).
BUBBLES = """() => [...document.querySelectorAll('#transcript-content .bubble')]
  .filter((n) => !n.hidden)
  .map((n) => [n.classList.contains('user') ? 'user' : 'agent', n.innerText.split('\\n')[0]])"""
FIRST = [["user", "please approve this"], ["agent", "You chose: allow"]]


def bubbles_are(page, expected) -> None:
    page.wait_for_function(
        f"(want) => JSON.stringify(({BUBBLES})()) === JSON.stringify(want)", arg=expected
    )


def reload_mid_turn_and_after(page) -> None:
    """Issue 28 §1 against the real master, client and web edge."""
    page.reload()  # after the turn: its prompt and answer once each, no status line (U-31)
    bubbles_are(page, FIRST)
    assert page.locator("#status-line").is_hidden()
    page.fill("#composer", "approve again")
    page.click("#send")
    open_allow = page.locator(".approval button[data-option-id='allow']:enabled")
    open_allow.wait_for()  # the agent waits for this answer: the turn is running
    page.reload()
    open_allow.wait_for()  # the open prompt is replayed, still to be answered
    bubbles_are(page, [*FIRST, ["user", "approve again"]])
    assert page.locator("#status-line").is_hidden()
    open_allow.click()  # the live turn goes on below, in the reloaded page
    bubbles_are(page, [*FIRST, ["user", "approve again"], ["agent", "You chose: allow"]])
    page.wait_for_selector("#status-line", state="hidden")
