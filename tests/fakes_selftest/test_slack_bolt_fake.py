"""A real Bolt AsyncApp, in HTTP mode and in Socket Mode, driven through the fake Slack."""

from __future__ import annotations

import time

import pytest
from aiohttp import web
from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.socket_mode.aiohttp import SocketModeClient
from slack_sdk.socket_mode.response import SocketModeResponse
from slack_sdk.web.async_client import AsyncWebClient

from tests.fakes.slack_server import FakeSlack


def build_app(fake: FakeSlack) -> AsyncApp:
    client = AsyncWebClient(token=fake.world.bot_token, base_url=fake.api_base_url)
    app = AsyncApp(client=client, signing_secret=fake.world.signing_secret)

    @app.event("app_mention")
    async def mentioned(event, say):
        await say(text=f"started: {event['text']}", thread_ts=event["ts"])

    @app.event("message")
    async def thread_message(event, client):
        await client.reactions_add(
            channel=event["channel"], timestamp=event["ts"], name="hourglass"
        )

    @app.action("approve")
    async def approve(ack, body, client):
        await ack()
        await client.chat_update(
            channel=body["container"]["channel_id"],
            ts=body["container"]["message_ts"],
            text=f"approved by <@{body['user']['id']}>",
        )

    @app.options("file")
    async def file_options(ack, payload):
        typed = payload["value"]
        options = [
            {"text": {"type": "plain_text", "text": f"src/{typed}{n}.py"}, "value": f"{typed}{n}"}
            for n in range(150)
        ]
        await ack(options=options[:100])

    @app.view("prompt_modal")
    async def submitted(ack, view):
        await ack(response_action="errors", errors={"file": "pick a file"})

    @app.command("/rawp")
    async def rawp_command(ack, command):
        await ack(text=f"nodes for {command['user_name']}")

    @app.action("deny")
    async def deny(ack, respond):
        await ack()
        await respond(
            text="only the person who started the turn can answer", replace_original=False
        )

    return app


@pytest.fixture
async def bolt_http():
    """The Bolt app served by its own aiohttp adapter on a loopback port."""
    async with FakeSlack() as fake:
        app = build_app(fake)
        runner = web.AppRunner(app.web_app(path="/slack/events"), handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        try:
            yield fake, f"http://127.0.0.1:{port}/slack/events"
        finally:
            await runner.cleanup()


async def test_signed_app_mention_is_answered_in_its_thread(bolt_http):
    fake, url = bolt_http
    event = fake.world.app_mention_event("start a session")
    answer = await fake.post_event_to(url, event)
    assert answer.status == 200
    reply = await fake.wait_for_call("chat.postMessage")
    assert reply.body["thread_ts"] == event["ts"]
    assert reply.body["text"] == f"started: <@{fake.world.bot_user_id}> start a session"


async def test_thread_message_gets_a_reaction_on_the_users_message(bolt_http):
    fake, url = bolt_http
    event = fake.world.message_event("a prompt", thread_ts=fake.world.next_ts())
    assert (await fake.post_event_to(url, event)).status == 200
    reaction = await fake.wait_for_call("reactions.add")
    assert reaction.response["ok"] is True
    assert reaction.body["timestamp"] == event["ts"]


async def test_signed_button_click_is_acked_and_handled(bolt_http):
    fake, url = bolt_http
    client = AsyncWebClient(token=fake.world.bot_token, base_url=fake.api_base_url)
    posted = await client.chat_postMessage(channel=fake.world.channel_id, text="Allow?")
    payload = fake.world.block_actions("approve", "yes", message=posted["message"])
    answer = await fake.post_interactive_to(url, payload)
    assert answer.status == 200
    update = await fake.wait_for_call("chat.update")
    assert update.body["ts"] == posted["ts"]
    assert update.body["text"] == f"approved by <@{fake.world.alice['id']}>"


async def test_respond_reaches_the_response_url(bolt_http):
    fake, url = bolt_http
    message = {"type": "message", "text": "Allow?", "ts": fake.world.next_ts()}
    payload = fake.world.block_actions("deny", "no", message=message, user=fake.world.bob)
    assert (await fake.post_interactive_to(url, payload)).status == 200
    hook = await fake.log.wait_for_call("POST", "/response-url/*")
    assert hook.path == "/response-url/" + payload["response_url"].rsplit("/", 1)[1]
    assert hook.body["text"] == "only the person who started the turn can answer"


async def test_block_suggestion_is_answered_with_options(bolt_http):
    fake, url = bolt_http
    answer = await fake.post_interactive_to(url, fake.world.block_suggestion("file", "ma"))
    assert answer.status == 200
    options = answer.json()["options"]
    assert len(options) == 100 and options[0]["value"] == "ma0"


async def test_view_submission_and_slash_command_answer_in_the_http_response(bolt_http):
    fake, url = bolt_http
    submission = fake.world.view_submission("prompt_modal", {"file": {"file": {}}})
    answer = await fake.post_interactive_to(url, submission)
    assert answer.json() == {"response_action": "errors", "errors": {"file": "pick a file"}}
    command = await fake.post_slash_command_to(url, fake.world.slash_command("/rawp", "nodes"))
    # Bolt answers an ack(text=...) alone as plain text, as Slack accepts it.
    assert command.status == 200 and command.text == "nodes for alice"


async def test_badly_signed_or_stale_requests_are_rejected(bolt_http):
    fake, url = bolt_http
    event = fake.world.app_mention_event("forged")
    good_secret = fake.world.signing_secret
    fake.world.signing_secret = "not-the-secret"
    forged = await fake.post_event_to(url, event)
    fake.world.signing_secret = good_secret
    stale = await fake.post_event_to(url, event, timestamp=int(time.time()) - 600)
    assert forged.status == 401 and stale.status == 401
    assert fake.calls("chat.postMessage") == []


async def test_socket_mode_client_connects_and_acknowledges():
    async with FakeSlack() as fake:
        web_client = AsyncWebClient(base_url=fake.api_base_url)
        client = SocketModeClient(app_token=fake.world.app_token, web_client=web_client)
        seen = []

        async def acknowledge(client: SocketModeClient, request) -> None:
            seen.append(request.payload)
            await client.send_socket_mode_response(
                SocketModeResponse(envelope_id=request.envelope_id)
            )

        client.socket_mode_request_listeners.append(acknowledge)
        await client.connect()
        try:
            await fake.wait_for_socket_client()
            event = fake.world.app_mention_event("over socket mode")
            envelope_id = await fake.push_event(event)
            ack = await fake.wait_for_ack(envelope_id)
            assert ack.body == {"envelope_id": envelope_id}
            assert seen[0]["event"]["text"] == event["text"]
            opened = fake.calls("apps.connections.open")[0]
            assert opened.headers["Authorization"] == f"Bearer {fake.world.app_token}"
        finally:
            await client.close()


async def test_bolt_socket_mode_handler_answers_a_slash_command_in_the_ack():
    async with FakeSlack() as fake:
        app = build_app(fake)
        web_client = AsyncWebClient(base_url=fake.api_base_url)
        handler = AsyncSocketModeHandler(app, fake.world.app_token, web_client=web_client)
        await handler.connect_async()
        try:
            await fake.wait_for_socket_client()
            envelope_id = await fake.push_slash_command(fake.world.slash_command("/rawp", ""))
            ack = await fake.wait_for_ack(envelope_id)
            assert ack.body["payload"]["text"] == "nodes for alice"
            mention = fake.world.app_mention_event("hi")
            await fake.wait_for_ack(await fake.push_event(mention))
            reply = await fake.wait_for_call("chat.postMessage")
            assert reply.body["text"] == f"started: <@{fake.world.bot_user_id}> hi"
            assert reply.body["thread_ts"] == mention["ts"]
        finally:
            await handler.close_async()


async def test_socket_mode_reconnects_when_slack_asks():
    async with FakeSlack() as fake:
        app = build_app(fake)
        web_client = AsyncWebClient(base_url=fake.api_base_url)
        handler = AsyncSocketModeHandler(app, fake.world.app_token, web_client=web_client)
        await handler.connect_async()
        try:
            await fake.wait_for_socket_client()
            await fake.socket_mode.disconnect("refresh_requested")
            await fake.log.wait_for_call("WS", "CONNECT", 10, count=2)
            await fake.wait_for_socket_client()
            assert len(fake.calls("apps.connections.open")) == 2  # a fresh ticket each time
            envelope_id = await fake.push_slash_command(fake.world.slash_command("/rawp"))
            ack = await fake.wait_for_ack(envelope_id)
            assert ack.body["payload"]["text"] == "nodes for alice"
        finally:
            await handler.close_async()
