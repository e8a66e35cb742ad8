"""One session in Slack and in the web edge at once (issue 21): as test_web_beside_discord,
with the real `rawp gateway` serving the fake Slack and the web edge (`--platform slack,web`).
The prompt is typed in the Slack thread, and the approval is answered in the web edge. The
Slack prompt is updated to "answered elsewhere" with its buttons gone. The agent's answer reads
the same in both."""

from __future__ import annotations

import json

import aiohttp

from gateway.approvals.interactions import ANSWERED_ELSEWHERE
from tests.fakes.slack_payloads import SlackWorld
from tests.fakes.slack_server import FakeSlack
from tests.gateway.chat_stack import (
    bolt_url,
    gateway_args,
    module_stack,
    slack_env,
    slack_greeting,
    slack_start,
)
from tests.gateway.test_conversations_slack import blocks_of, in_thread, text_of
from tests.gateway.test_web_links_chat import link_in
from tests.support import free_port, wait_for_http
from tests.up.test_up_web import answer_frame, receive_until

WORLD = SlackWorld()
stack = module_stack("web-beside-slack", f"slack:{WORLD.team_id}:{WORLD.alice['id']}")


async def test_an_approval_answered_in_the_web_edge_closes_the_slack_prompt(
    stack, processes, tmp_path
):
    web_port, bolt_port = free_port(), free_port()
    base = f"http://127.0.0.1:{web_port}"
    async with FakeSlack(WORLD) as slack:
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
        link = link_in(json.dumps(answered.body), base)
        jar = aiohttp.CookieJar(unsafe=True)
        async with aiohttp.ClientSession(cookie_jar=jar) as browser:
            async with browser.get(link, allow_redirects=False) as signed:
                assert signed.status == 303
            async with browser.get(f"{base}/api/sessions") as listed:
                [session] = (await listed.json())["sessions"]
            sid = session["session_id"]
            async with browser.ws_connect(
                f"{base}/api/sessions/{sid}/stream", headers={"Origin": base}
            ) as ws:
                seen: list[dict] = []
                event = WORLD.message_event("please approve this", thread_ts=thread_ts)
                await slack.post_event_to(bolt, event)
                ask = await receive_until(ws, "agent.interaction.request", seen)
                question = await slack.wait_for_call(
                    "chat.postMessage", where=lambda c: "Apply the change" in text_of(c), timeout=60
                )
                assert any(b.get("type") == "actions" for b in blocks_of(question))

                await ws.send_str(answer_frame(ask))
                await receive_until(ws, "session.turn.end", seen)

                prompt_ts = question.response["ts"]
                closed = await slack.wait_for_call(
                    "chat.update", where=lambda c: c.body.get("ts") == prompt_ts, timeout=30
                )
                assert ANSWERED_ELSEWHERE in text_of(closed) + json.dumps(blocks_of(closed))
                assert not any(b.get("type") == "actions" for b in blocks_of(closed))
                await slack.wait_for_call(
                    "chat.postMessage", where=lambda c: "You chose: allow" in text_of(c), timeout=60
                )

        posted = "\n".join(text_of(c) for c in in_thread(slack, thread_ts))
        said = [f["payload"]["text"] for f in seen if f["type"] == "agent.text.done"]
        assert said and all(text.strip() in posted for text in said), (said, posted)
        updates = [text_of(c) for c in slack.calls("chat.update") if c.body.get("ts") == prompt_ts]
        assert not any("Answered: " in text or "denied" in text for text in updates), updates
