"""The other direction of tests/gateway/test_web_beside_slack.py, in Chromium (issue 21): one
session open in the fake Slack and in the web app at once. The approval is answered with the
Slack button; the browser's prompt closes as answered elsewhere, its buttons disabled, and the
agent's answer appears in the page as in the thread. Real processes throughout: a master and
client with the demo agent, and the `rawp gateway` serving the fake Slack and the web edge."""

from __future__ import annotations

import json

from playwright.async_api import async_playwright

from tests.fakes.slack_payloads import SlackWorld
from tests.fakes.slack_server import FakeSlack
from tests.gateway.chat_stack import (
    bolt_url,
    gateway_args,
    module_stack,
    slack_button_click,
    slack_env,
    slack_greeting,
    slack_start,
)
from tests.gateway.test_conversations_slack import text_of
from tests.gateway.test_web_links_chat import link_in
from tests.support import free_port, wait_for_http
from tests.web.conftest import ARTIFACTS

WORLD = SlackWorld()
stack = module_stack("web-live-slack", f"slack:{WORLD.team_id}:{WORLD.alice['id']}")


async def test_an_approval_answered_in_slack_closes_the_browsers_prompt(
    stack, processes, tmp_path, chromium_path
):
    web_port, bolt_port = free_port(), free_port()
    base = f"http://127.0.0.1:{web_port}"
    async with FakeSlack(WORLD) as slack, async_playwright() as playwright:
        flags = ("--platform", "slack,web", "--web-port", str(web_port))
        env = slack_env(slack, WORLD, bolt_port, RAWP_WEB_PUBLIC_URL=base)
        gateway = processes.rawp(*gateway_args(stack, tmp_path, *flags), env=env)
        bolt = bolt_url(bolt_port)
        wait_for_http(bolt, proc=gateway, timeout=60)
        _, thread_ts = await slack_start(slack, WORLD, bolt)
        await slack_greeting(slack)
        await slack.post_slash_command_to(bolt, WORLD.slash_command("/rawp", "web"))
        answered = await slack.log.wait_for_call(
            "POST", "/response-url/*", 30, where=lambda c: "/login?t=" in json.dumps(c.body)
        )

        browser = await playwright.chromium.launch(executable_path=chromium_path, headless=True)
        page = await browser.new_page(viewport={"width": 1100, "height": 700})
        page.set_default_timeout(30_000)
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        try:
            await page.goto(link_in(json.dumps(answered.body), base))
            item = page.locator(".session-item[data-session-id]").first
            await item.click()
            await page.wait_for_selector("#session[data-session-id]")

            event = WORLD.message_event("please approve this", thread_ts=thread_ts)
            await slack.post_event_to(bolt, event)
            allow_here = page.locator(".approval button[data-option-id='allow']")
            await allow_here.wait_for()
            question = await slack.wait_for_call(
                "chat.postMessage", where=lambda c: "Apply the change" in text_of(c), timeout=60
            )
            click = slack_button_click(WORLD, question, thread_ts, "Allow once")
            assert (await slack.post_interactive_to(bolt, click)).status == 200

            # The browser's prompt closes without being pressed, and the answer shows.
            closed = page.locator(".approval.closed .approval-answer", has_text="elsewhere")
            await closed.wait_for()
            assert await allow_here.is_disabled()
            chose = page.locator("#transcript .bubble.agent", has_text="You chose: allow")
            await chose.wait_for()
            await slack.wait_for_call(
                "chat.postMessage", where=lambda c: "You chose: allow" in text_of(c), timeout=60
            )
        except Exception:
            ARTIFACTS.mkdir(exist_ok=True)
            await page.screenshot(path=str(ARTIFACTS / "test_live_slack.png"), full_page=True)
            raise
        finally:
            await browser.close()
    assert not errors, f"errors in the page: {errors}"
