"""One session in Discord and in the web edge at once (issue 21): a real master and client
(processes, the demo agent) and the real `rawp gateway` serving the fake Discord and the web
edge (`--platform discord,web`). The prompt is typed in the Discord thread; the web edge's
session socket (what the browser app opens) sees the same turn. The approval is answered in
the web edge: the agent goes on, the Discord prompt closes as answered elsewhere (never
expiring into a deny), and the agent's answer reads the same in both."""

from __future__ import annotations

import aiohttp

from gateway.approvals.interactions import ANSWERED_ELSEWHERE
from tests.fakes.discord_payloads import DiscordWorld
from tests.fakes.discord_server import FakeDiscord
from tests.gateway.chat_stack import (
    buttons,
    content,
    discord_env,
    discord_ready,
    discord_start,
    gateway_args,
    module_stack,
    sub,
)
from tests.gateway.test_web_links_chat import link_in
from tests.support import free_port
from tests.up.test_up_web import answer_frame, receive_until

WORLD = DiscordWorld()
stack = module_stack("web-beside-discord", f"discord:{WORLD.alice['id']}")
EPHEMERAL = 64


async def web_link(fake: FakeDiscord, base: str) -> str:
    interaction = await fake.inject_slash_command("rawp", sub("web"))
    await fake.wait_for_interaction_answer(interaction)
    webhook = f"/webhooks/{WORLD.application_id}/{interaction['token']}"
    reply = await fake.wait_for_call("POST", webhook, timeout=30)
    return link_in(content(reply), base)


async def test_an_approval_answered_in_the_web_edge_closes_the_discord_prompt(
    stack, processes, tmp_path
):
    web_port = free_port()
    base = f"http://127.0.0.1:{web_port}"
    async with FakeDiscord(WORLD) as fake:
        flags = ("--platform", "discord,web", "--web-port", str(web_port))
        processes.rawp(*gateway_args(stack, tmp_path, *flags), env=discord_env(fake, WORLD))
        await discord_ready(fake)
        _, thread_id = await discord_start(fake)
        thread_posts = f"/channels/{thread_id}/messages"
        await fake.wait_for_call("POST", thread_posts, timeout=30)  # the greeting

        jar = aiohttp.CookieJar(unsafe=True)
        async with aiohttp.ClientSession(cookie_jar=jar) as browser:
            async with browser.get(await web_link(fake, base), allow_redirects=False) as signed:
                assert signed.status == 303
            async with browser.get(f"{base}/api/sessions") as listed:
                [session] = (await listed.json())["sessions"]
            sid = session["session_id"]
            async with browser.ws_connect(
                f"{base}/api/sessions/{sid}/stream", headers={"Origin": base}
            ) as ws:
                seen: list[dict] = []
                await fake.inject_message("please approve this", channel_id=thread_id)
                ask = await receive_until(ws, "agent.interaction.request", seen)
                question = await fake.wait_for_call(
                    "POST",
                    thread_posts,
                    where=lambda c: "Apply the change" in content(c),
                    timeout=60,
                )
                assert any(b.get("label") == "Allow once" for b in buttons(question))

                # Answered in the web edge, as its Allow button sends it.
                await ws.send_str(answer_frame(ask))
                await receive_until(ws, "session.turn.end", seen)

                # The Discord prompt: closed as answered elsewhere, its buttons gone.
                closed = await fake.wait_for_call(
                    "PATCH", f"{thread_posts}/{question.response['id']}", timeout=30
                )
                assert ANSWERED_ELSEWHERE in content(closed)
                assert not closed.body.get("components")
                await fake.wait_for_call(
                    "POST",
                    thread_posts,
                    where=lambda c: "You chose: allow" in content(c),
                    timeout=60,
                )

        # The same answer in both: every finished text block of the web edge's turn is in
        # the thread, and the gateway never answered the prompt itself.
        posted = "\n".join(content(c) for c in fake.calls("POST", thread_posts))
        said = [f["payload"]["text"] for f in seen if f["type"] == "agent.text.done"]
        assert said and all(text.strip() in posted for text in said), (said, posted)
        edits = [
            content(c) for c in fake.calls("PATCH", f"{thread_posts}/{question.response['id']}")
        ]
        assert not any("Answered: " in text or "denied" in text for text in edits), edits
