"""The Bolt app: signed requests, slash commands, the file composer, access, Socket Mode."""

from __future__ import annotations

import json

import pytest
from aiohttp import web

from adapters.slack import SlackBot, SlackSettings
from adapters.slack.access import SlackAccess, members_from
from adapters.slack.platform import web_client
from tests.adapters.chat_support import RecordingHooks
from tests.adapters.slack_support import running_app
from tests.fakes.slack_server import FakeSlack
from tests.gateway.support import eventually


@pytest.fixture
async def slack_app():
    async with FakeSlack() as fake:
        hooks = RecordingHooks()
        async with running_app(fake, hooks) as bot:
            yield fake, bot, hooks


def composer_view(fake: FakeSlack, thread_ts: str | None) -> dict:
    where = json.dumps({"c": fake.world.channel_id, "t": thread_ts})
    return fake.world.view("rawp_prompt_view", private_metadata=where)


async def test_a_signed_block_suggestion_gets_file_options(slack_app):
    fake, bot, hooks = slack_app
    view = composer_view(fake, "1700000000.000100")
    suggestion = fake.world.block_suggestion("rawp_file", "mod1", block_id="files", view=view)
    answer = await fake.post_interactive_to(bot.http_url, suggestion)
    assert answer.status == 200
    options = answer.json()["options"]
    assert [o["value"] for o in options][:3] == ["src/mod1.py", "src/mod10.py", "src/mod11.py"]
    assert len(options) == 11 and options[0]["text"]["text"] == "src/mod1.py"
    [(_, invocation, typed)] = hooks.of("search")
    assert typed == "mod1" and invocation.conversation.thread_id == "1700000000.000100"


async def test_many_candidates_are_cut_to_slacks_100_options(slack_app):
    fake, bot, hooks = slack_app
    hooks.files = hooks.files * 4  # 160 candidates
    suggestion = fake.world.block_suggestion("rawp_file", "mod", view=composer_view(fake, None))
    answer = await fake.post_interactive_to(bot.http_url, suggestion)
    assert len(answer.json()["options"]) == 100


async def test_a_badly_signed_or_stale_request_is_refused(slack_app):
    fake, bot, hooks = slack_app
    suggestion = fake.world.block_suggestion("rawp_file", "mod", view=composer_view(fake, None))
    secret = fake.world.signing_secret
    fake.world.signing_secret = "forged"
    forged = await fake.post_interactive_to(bot.http_url, suggestion)
    fake.world.signing_secret = secret
    stale = await fake.post_interactive_to(bot.http_url, suggestion, timestamp=1_600_000_000)
    assert (forged.status, stale.status) == (401, 401)
    assert hooks.of("search") == []


async def test_slash_start_reaches_the_hook_and_answers_privately(slack_app):
    fake, bot, hooks = slack_app
    command = fake.world.slash_command("/rawp", "start node-1 demo")
    assert (await fake.post_slash_command_to(bot.http_url, command)).status == 200
    reply = await fake.log.wait_for_call("POST", "/response-url/*")
    assert reply.body == {"text": "started demo on node-1", "response_type": "ephemeral"}
    [(_, invocation, node, agent, worktree)] = hooks.of("start")
    assert (node, agent, invocation.workspace_id) == ("node-1", "demo", fake.world.team_id)
    assert worktree is False
    wrong = fake.world.slash_command("/rawp", "frobnicate")
    await fake.post_slash_command_to(bot.http_url, wrong)
    usage = await fake.log.wait_for_call("POST", "/response-url/*", count=2)
    assert usage.body["text"].startswith("Usage: `/rawp start <node> <agent>`")


async def test_the_composer_sends_picked_files_as_tokens(slack_app):
    fake, bot, hooks = slack_app
    opened = fake.world.slash_command("/rawp", "prompt")
    await fake.post_slash_command_to(bot.http_url, opened)
    view = (await fake.wait_for_call("views.open")).body["view"]
    elements = {b["block_id"]: b["element"] for b in view["blocks"]}
    assert elements["files"]["type"] == "multi_external_select"
    assert elements["command"]["type"] == "external_select"
    thread = "1700000000.000200"
    values = {
        "text": {"rawp_text": {"type": "plain_text_input", "value": "explain <@file:x|y>"}},
        "files": {"rawp_file": {"selected_options": [{"value": "src/mod3.py"}]}},
        "command": {"rawp_command": {"selected_option": None}},
    }
    where = json.dumps({"c": fake.world.channel_id, "t": thread})
    submit = fake.world.view_submission("rawp_prompt_view", values, private_metadata=where)
    assert (await fake.post_interactive_to(bot.http_url, submit)).status == 200
    await eventually(lambda: hooks.of("prompt"), "the prompt hook")
    [(_, invocation, request)] = hooks.of("prompt")
    assert request.prompt_text == r"explain \<@file:x|y> <@file:ref_0|src/mod3.py>"
    assert [r.path for r in request.file_references] == ["src/mod3.py"]
    shown = fake.calls("chat.postMessage")[-1].body
    assert shown["thread_ts"] == thread and invocation.message.message_id
    assert shown["text"].startswith(f"<@{fake.world.alice['id']}>: explain &lt;@file:x|y&gt;")


async def test_the_composer_sends_an_agent_command_as_a_slash_command(slack_app):
    fake, bot, hooks = slack_app
    suggestion = fake.world.block_suggestion(
        "rawp_command", "/co", block_id="command", view=composer_view(fake, "1.2")
    )
    options = (await fake.post_interactive_to(bot.http_url, suggestion)).json()["options"]
    assert options == [
        {
            "text": {"type": "plain_text", "text": "/compact — Shrink the context"},
            "value": "compact",
        }
    ]
    values = {
        "text": {"rawp_text": {"value": "auth module"}},
        "command": {"rawp_command": {"selected_option": {"value": "compact"}}},
    }
    where = json.dumps({"c": fake.world.channel_id, "t": "1.2"})
    submit = fake.world.view_submission("rawp_prompt_view", values, private_metadata=where)
    await fake.post_interactive_to(bot.http_url, submit)
    await eventually(lambda: hooks.of("prompt"), "the prompt hook")
    request = hooks.of("prompt")[0][2]
    assert (request.input_type, request.prompt_text) == ("slash_command", "/compact auth module")


async def test_a_thread_message_is_an_escaped_prompt_with_its_file(slack_app):
    fake, bot, hooks = slack_app
    shared = fake.add_file("notes.txt", b"hello")
    # As Slack sends what alice typed: `look at <@file:x|y> \ this @U0B0B https://x.org`.
    typed = r"look at &lt;@file:x|y&gt; \ this <@U0B0B> <https://x.org>"
    event = fake.world.message_event(typed, thread_ts="1700000000.000300", files=[shared])
    top_level = fake.world.message_event("not in a thread")
    await fake.post_event_to(bot.http_url, top_level)
    assert (await fake.post_event_to(bot.http_url, event)).status == 200
    await eventually(lambda: hooks.of("prompt"), "the prompt hook")
    [(_, invocation, request)] = hooks.of("prompt")
    # Escaped once, at the edge (K-08, §16.2.2): the typed token is not a file reference.
    assert request.prompt_text == r"look at \<@file:x|y> \\ this @U0B0B https://x.org"
    assert request.file_references == []
    assert [a.name for a in request.attachments] == ["notes.txt"]
    assert invocation.message.message_id == event["ts"]
    assert invocation.conversation.thread_id == "1700000000.000300"


async def test_a_channel_not_allowed_is_refused_privately():
    async with FakeSlack() as fake:
        hooks = RecordingHooks()
        async with running_app(fake, hooks, allowed_channels=frozenset({"C-OTHER"})) as bot:
            command = fake.world.slash_command("/rawp", "nodes")
            answer = await fake.post_slash_command_to(bot.http_url, command)
            assert "not available to you" in answer.text
            event = fake.world.message_event("a prompt", thread_ts="1.1")
            await fake.post_event_to(bot.http_url, event)
            suggestion = fake.world.block_suggestion(
                "rawp_file", "mod", view=composer_view(fake, None)
            )
            assert (await fake.post_interactive_to(bot.http_url, suggestion)).json() == {
                "options": []
            }
            assert hooks.calls == []


async def test_user_groups_come_from_usergroups_users_list():
    """A small Web API that only knows usergroups.users.list, as the workspace answers it."""
    asked = []

    async def usergroup_members(request: web.Request) -> web.Response:
        group = request.query.get("usergroup") or (await request.post()).get("usergroup")
        asked.append(group)
        users = ["U-ALICE"] if group == "S-OPS" else []
        return web.json_response({"ok": True, "users": users})

    app = web.Application()
    app.router.add_route("*", "/api/usergroups.users.list", usergroup_members)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        port = runner.addresses[0][1]
        client = web_client("xoxb-test", f"http://127.0.0.1:{port}/api/")
        now = [0.0]
        access = SlackAccess(
            members_from(client), usergroups=frozenset({"S-OPS"}), clock=lambda: now[0]
        )
        assert await access.allows("T1", "C1", "U-ALICE")
        assert not await access.allows("T1", "C1", "U-BOB")
        assert asked == ["S-OPS"]  # remembered for a while
        now[0] = 301.0
        assert await access.allows("T1", "C1", "U-ALICE")
        assert asked == ["S-OPS", "S-OPS"]
        bot = SlackBot(
            SlackSettings(
                bot_token="xoxb-test",
                app_token="xapp-test",
                api_base_url=f"http://127.0.0.1:{port}/api/",
                approver_usergroups=frozenset({"S-OPS", "S-EMPTY"}),
            )
        )
        assert await bot.approver_ids() == {"U-ALICE"}
    finally:
        await runner.cleanup()


async def test_a_failed_usergroup_lookup_refuses():
    async with FakeSlack() as fake:  # the fake has no usergroups.users.list: unknown_method
        client = web_client(fake.world.bot_token, fake.api_base_url)
        access = SlackAccess(members_from(client), usergroups=frozenset({"S1"}))
        assert not await access.allows(fake.world.team_id, None, fake.world.alice["id"])


async def test_socket_mode_answers_suggestions_in_the_ack():
    async with FakeSlack() as fake:
        hooks = RecordingHooks()
        async with running_app(fake, hooks, mode="socket"):
            suggestion = fake.world.block_suggestion(
                "rawp_file", "mod2", view=composer_view(fake, None)
            )
            envelope = await fake.push_interactive(suggestion)
            ack = await fake.wait_for_ack(envelope)
            values = [o["value"] for o in ack.body["payload"]["options"]]
            assert values == ["src/mod2.py", "src/mod20.py"] + [
                f"src/mod2{n}.py" for n in range(1, 10)
            ]


def test_the_manifest_asks_for_what_the_adapter_uses():
    """The manifest is YAML; without a YAML parser in the project, read its simple lines."""
    from pathlib import Path

    from adapters.slack.settings import SlackSettings

    manifest = (Path(__file__).parents[2] / "adapters/slack/manifest.yaml").read_text()
    listed = {line.split("#")[0].strip().removeprefix("- ") for line in manifest.splitlines()}
    default_command = SlackSettings(bot_token="x", app_token="y").command
    assert f"command: {default_command}" in listed
    scopes = {"chat:write", "commands", "reactions:write", "channels:history", "files:read"}
    scopes |= {"files:write"}  # agent.file uploads (files.getUploadURLExternal)
    assert scopes | {"usergroups:read", "assistant:write"} <= listed
    assert {"message.channels", "app_mention", "socket_mode_enabled: true"} <= listed
    # Mentions and direct messages start sessions (issue 16 §1).
    assert {"app_mentions:read", "im:history", "message.im"} <= listed
    assert {"messages_tab_enabled: true", "messages_tab_read_only_enabled: false"} <= listed


async def test_a_failing_hook_answers_with_an_apology_not_silence():
    class BrokenHooks(RecordingHooks):
        async def start_session(self, invocation, node, agent, worktree=False):
            raise RuntimeError("the master is down")

    async with FakeSlack() as fake, running_app(fake, BrokenHooks()) as bot:
        command = fake.world.slash_command("/rawp", "start node-1 demo")
        await fake.post_slash_command_to(bot.http_url, command)
        reply = await fake.log.wait_for_call("POST", "/response-url/*")
        assert reply.body["text"].startswith("⚠️ Something went wrong on our side")


async def test_without_a_conversation_layer_commands_say_so_until_one_is_plugged_in():
    async with FakeSlack() as fake, running_app(fake) as bot:
        await fake.post_slash_command_to(bot.http_url, fake.world.slash_command("/rawp", "nodes"))
        reply = await fake.log.wait_for_call("POST", "/response-url/*")
        assert reply.body["text"] == "The gateway is not connected to a master yet."
        bot.platform.use_hooks(RecordingHooks())
        await fake.post_slash_command_to(bot.http_url, fake.world.slash_command("/rawp", "nodes"))
        reply = await fake.log.wait_for_call("POST", "/response-url/*", count=2)
        assert reply.body["text"] == "laptop · online"


async def test_usage_is_answered_only_to_the_asker():
    """Issue 16 §4: `/rawp usage` goes to the usage hook; the answer is ephemeral."""
    async with FakeSlack() as fake:
        hooks = RecordingHooks()
        async with running_app(fake, hooks) as bot:
            command = fake.world.slash_command("/rawp", "usage")
            await fake.post_slash_command_to(bot.http_url, command)
            reply = await fake.log.wait_for_call("POST", "/response-url/*")
            [(_, invocation)] = hooks.of("usage")
            assert reply.body["text"] == f"📊 usage for {invocation.user_id}"
            assert reply.body["response_type"] == "ephemeral"
            assert invocation.user_id == command["user_id"]
