"""Closing a fake ends every socket it holds, so its aiohttp runner does not wait out its shutdown
timeout (60 s) for a handler still open. A bot that had reconnected but not yet identified kept
one open: under load one Discord test in ten took a minute longer (seen as ~62 s tests in the
suite's `--durations`). A client that comes back while the fake closes is turned away."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest

from tests.fakes.discord_server import FakeDiscord
from tests.fakes.slack_server import FakeSlack

WITHIN_S = 10  # far below aiohttp's 60 s shutdown timeout, far above a close on loopback


async def test_the_fake_discord_closes_a_socket_that_never_identified():
    fake = FakeDiscord()
    await fake.__aenter__()
    async with aiohttp.ClientSession() as session, session.ws_connect(fake.gateway_url) as ws:
        hello = await ws.receive_json()
        assert hello["op"] == 10  # connected, HELLO read, no IDENTIFY sent: not a session yet
        await asyncio.wait_for(fake.__aexit__(None, None, None), WITHIN_S)
        closing = await asyncio.wait_for(ws.receive(), WITHIN_S)
        assert closing.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)


async def test_a_client_coming_back_while_the_fake_discord_closes_is_turned_away():
    async with FakeDiscord() as fake:
        await fake.gateway.close_all()
        async with aiohttp.ClientSession() as session:
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await session.ws_connect(fake.gateway_url)
    assert refused.value.status == 503


async def test_a_client_coming_back_while_the_fake_slack_closes_is_turned_away():
    async with FakeSlack() as slack:
        await slack.socket_mode.close_all()
        slack.web_api.tickets.add("t-1")
        async with aiohttp.ClientSession() as session:
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await session.ws_connect(f"{slack.socket_url}?ticket=t-1")
    assert refused.value.status == 503
    assert "t-1" in slack.web_api.tickets  # the ticket was not spent on a refused connection
