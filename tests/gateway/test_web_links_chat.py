"""`/rawp web` in Discord and Slack (issue 21): the real `rawp gateway` process serving a chat
platform (the fake Discord / fake Slack) and the web edge beside it (`--platform …,web`),
against a real master and client. The answer is ephemeral, carries a one-time link for the
caller, and that link signs a browser in as the caller's subject, who sees their node."""

from __future__ import annotations

import asyncio
import json
import re

import aiohttp

from tests.edge.stack import EDGE_SECRET
from tests.fakes.discord_payloads import DiscordWorld
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.slack_payloads import SlackWorld
from tests.fakes.slack_server import FakeSlack
from tests.gateway.chat_stack import (
    bolt_url,
    content,
    discord_env,
    discord_ready,
    gateway_args,
    module_stack,
    slack_env,
    sub,
)
from tests.support import free_port, wait_for_http

DISCORD = DiscordWorld()
SLACK = SlackWorld()
EPHEMERAL = 64
# The stack's node is paired for the Discord user; the Slack user has none.
stack = module_stack("web-links", f"discord:{DISCORD.alice['id']}")


def link_in(text: str, base: str) -> str:
    found = re.search(re.escape(base) + r"/login\?t=[A-Za-z0-9_-]+", text)
    assert found, text
    return found.group(0)


async def signed_in_as(link: str) -> tuple[dict, dict]:
    """Open `link` as a browser would: (/api/me, /api/nodes) with the cookie it set."""
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
        async with http.get(link, allow_redirects=False) as answer:
            assert answer.status == 303, await answer.text()
        async with http.get(link.split("/login")[0] + "/api/me") as me:
            assert me.status == 200
            who = await me.json()
        async with http.get(link.split("/login")[0] + "/api/nodes") as nodes:
            return who, await nodes.json()


async def test_rawp_web_in_discord_answers_privately_with_a_working_link(
    stack, processes, tmp_path
):
    web_port = free_port()
    async with FakeDiscord(DISCORD) as fake:
        web_flags = ("--platform", "discord,web", "--web-port", str(web_port))
        args = gateway_args(stack, tmp_path, *web_flags)
        processes.rawp(*args, env=discord_env(fake, DISCORD))
        await discord_ready(fake)
        interaction = await fake.inject_slash_command("rawp", sub("web"))
        deferred = await fake.wait_for_interaction_answer(interaction)
        assert deferred.body["data"]["flags"] == EPHEMERAL  # only the caller sees it
        webhook = f"/webhooks/{DISCORD.application_id}/{interaction['token']}"
        reply = await fake.wait_for_call("POST", webhook, timeout=30)
        assert reply.body["flags"] & EPHEMERAL
        link = link_in(content(reply), f"http://127.0.0.1:{web_port}")
        who, nodes = await signed_in_as(link)
        assert who["subject"] == f"discord:{DISCORD.alice['id']}"
        assert [n["device_name"] for n in nodes["nodes"]] == ["test-box"]
        # A second /rawp web is a new link; the first one is spent.
        async with aiohttp.ClientSession() as http, http.get(link) as again:
            assert again.status == 401


async def test_rawp_web_in_slack_answers_ephemerally_with_the_public_url(
    stack, processes, tmp_path
):
    web_port, bolt_port = free_port(), free_port()
    public = f"http://localhost:{web_port}"  # RAWP_WEB_PUBLIC_URL is what links are made of
    async with FakeSlack(SLACK) as slack:
        env = slack_env(slack, SLACK, bolt_port, RAWP_WEB_PUBLIC_URL=public)
        args = gateway_args(stack, tmp_path, "--platform", "slack,web", "--web-port", str(web_port))
        gateway = processes.rawp(*args, env=env)
        wait_for_http(bolt_url(bolt_port), proc=gateway, timeout=60)
        await slack.post_slash_command_to(bolt_url(bolt_port), SLACK.slash_command("/rawp", "web"))
        answer = await slack.log.wait_for_call("POST", "/response-url/*", 30)
        assert answer.body["response_type"] == "ephemeral"
        link = link_in(json.dumps(answer.body), public)
        who, nodes = await signed_in_as(link)
        assert who["subject"] == f"slack:{SLACK.team_id}:{SLACK.alice['id']}"
        assert nodes == {"nodes": []}  # the stack's machine is the Discord user's, not theirs


async def test_the_web_edge_alone_prints_a_link_for_the_subject_it_is_told(
    stack, processes, tmp_path
):
    web_port = free_port()
    subject = f"discord:{DISCORD.alice['id']}"
    flags = ("--platform", "web", "--web-port", str(web_port), "--web-login-for", subject)
    gateway = processes.rawp(*gateway_args(stack, tmp_path, *flags), env=discord_env_free())

    def printed_link() -> str:
        for raw in gateway.stdout:  # stderr is merged into it
            if found := re.search(r"rawp gateway: web: (\S+)", raw.decode()):
                return found.group(1)
        raise AssertionError(f"the gateway ended ({gateway.wait()}) without a link")

    link = await asyncio.to_thread(printed_link)
    assert link.startswith(f"http://127.0.0.1:{web_port}/login?t=")
    who, nodes = await signed_in_as(link)
    assert who["subject"] == subject
    assert [n["device_name"] for n in nodes["nodes"]] == ["test-box"]


def discord_env_free() -> dict[str, str]:
    """No chat platform token: the web edge is the only platform."""
    return {"RAWP_EDGE_SECRET": EDGE_SECRET, "DISCORD_BOT_TOKEN": "", "SLACK_BOT_TOKEN": ""}
