"""A real discord.py `commands.Bot` against the fake Discord: REST, gateway, events, 429s."""

from __future__ import annotations

import asyncio
import contextlib
import io

import aiohttp
import discord
import pytest
from discord import app_commands
from discord.ext import commands

from tests.fakes.discord_payloads import button_row, command_option
from tests.fakes.discord_server import FakeDiscord, discord_endpoints

APPROVE_ID = "rawp:approve:turn-1"


class ApprovalView(discord.ui.View):
    """A persistent view, so a click is routed by custom_id alone (as after a bot restart)."""

    def __init__(self) -> None:
        super().__init__(timeout=None)

    @discord.ui.button(label="Approve", custom_id=APPROVE_ID)
    async def approve(self, interaction: discord.Interaction, button: discord.ui.Button) -> None:
        await interaction.response.send_message(f"approved by {interaction.user.name}")


class AskModal(discord.ui.Modal, title="Answer the agent"):
    answer = discord.ui.TextInput(label="Answer", custom_id="rawp:answer")

    def __init__(self) -> None:
        super().__init__(custom_id="rawp:ask:turn-1")

    async def on_submit(self, interaction: discord.Interaction) -> None:
        await interaction.response.send_message(f"you said {self.answer.value}")


def build_bot(members_intent: bool = True, content_intent: bool = True) -> commands.Bot:
    intents = discord.Intents.default()
    intents.message_content = content_intent
    intents.members = members_intent
    bot = commands.Bot(command_prefix="!", intents=intents, guild_ready_timeout=0.05)

    @bot.tree.command(name="prompt", description="Send a prompt")
    async def prompt(interaction: discord.Interaction, text: str, file: str) -> None:
        await interaction.response.send_message(f"prompt {text!r} with {file}")

    @prompt.autocomplete("file")
    async def file_choices(
        interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        matches = [f"src/{current}{n}.py" for n in range(40)]
        return [app_commands.Choice(name=path, value=path) for path in matches][:25]

    @bot.tree.command(name="ask", description="Open a modal")
    async def ask(interaction: discord.Interaction) -> None:
        await interaction.response.send_modal(AskModal())

    @bot.event
    async def on_message(message: discord.Message) -> None:
        if message.author.bot:
            return
        await message.channel.send(f"echo: {message.content}")

    async def setup_hook() -> None:
        bot.add_view(ApprovalView())
        await bot.tree.sync()

    bot.setup_hook = setup_hook
    return bot


@contextlib.asynccontextmanager
async def started_bot(fake: FakeDiscord, members_intent: bool = True, content_intent: bool = True):
    """A real bot logged in to `fake` and past on_ready; closed on exit."""
    bot = build_bot(members_intent, content_intent)
    ready = asyncio.Event()

    async def on_ready() -> None:
        ready.set()

    bot.add_listener(on_ready)
    task = asyncio.create_task(bot.start(fake.world.bot_token))
    try:
        await asyncio.wait_for(ready.wait(), 10)
        yield bot
    finally:
        await bot.close()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(task, 5)


@pytest.fixture
async def running():
    async with FakeDiscord() as fake:
        with discord_endpoints(fake):
            async with started_bot(fake) as bot:
                yield fake, bot


async def test_bot_logs_in_connects_and_sees_the_guild(running):
    fake, bot = running
    assert bot.user.id == int(fake.world.application_id)
    guild = bot.get_guild(int(fake.world.guild_id))
    assert guild is not None and guild.name == "rawp test guild"
    assert guild.get_channel(int(fake.world.channel_id)).name == "rawp"
    alice = guild.get_member(int(fake.world.alice["id"]))
    assert [r.name for r in alice.roles] == ["@everyone", "rawp-operator"]
    identify = fake.calls("WS", "IDENTIFY")[0]
    assert identify.body["token"] == fake.world.bot_token
    # With the members intent discord.py chunks the guild (op 8) before on_ready.
    chunk_request = fake.calls("WS", "REQUEST_GUILD_MEMBERS")[0]
    assert str(chunk_request.body["guild_id"]) == fake.world.guild_id
    assert [c.path for c in fake.log.find("GET", "/**")][:2] == [
        "/users/@me",
        "/oauth2/applications/@me",
    ]


async def test_gateway_uses_zlib_stream_when_asked(running):
    fake, _ = running
    connect = fake.calls("WS", "CONNECT")[0]
    assert connect.query["encoding"] == "json" and connect.query["v"] == "10"
    # Without zstandard installed discord.py asks for zlib-stream; it became ready, so it
    # inflated our compressed frames.
    assert connect.query["compress"] == "zlib-stream"
    assert connect.body == {"zlib_stream": True}


async def test_app_command_sync_is_a_bulk_overwrite(running):
    fake, _ = running
    sync = await fake.wait_for_call("PUT", f"/applications/{fake.world.application_id}/commands")
    assert sorted(c["name"] for c in sync.body) == ["ask", "prompt"]
    [command] = [c for c in sync.body if c["name"] == "prompt"]
    options = {o["name"]: o for o in command["options"]}
    assert options["file"]["autocomplete"] is True and options["text"]["required"] is True


async def test_injected_message_is_parsed_and_answered(running):
    fake, _ = running
    sent = await fake.inject_message("hello there")
    path = f"/channels/{sent['channel_id']}/messages"
    reply = await fake.wait_for_call("POST", path)
    assert reply.body["content"] == "echo: hello there"
    assert reply.headers["Authorization"] == f"Bot {fake.world.bot_token}"


async def test_message_in_a_thread_is_answered_in_the_thread(running):
    fake, bot = running
    channel = bot.get_channel(int(fake.world.channel_id))
    starter = await channel.send("session started")
    thread = await starter.create_thread(name="session 1")
    assert thread.id == starter.id  # a thread started from a message takes its id
    with pytest.raises(discord.HTTPException) as again:
        await starter.create_thread(name="session 1 again")
    assert again.value.code == 160004
    await fake.inject_message("prompt in thread", channel_id=str(thread.id))
    reply = await fake.wait_for_call("POST", f"/channels/{thread.id}/messages")
    assert reply.body["content"] == "echo: prompt in thread"


async def test_renderer_primitives_reach_the_fake_in_order(running):
    fake, bot = running
    received: asyncio.Future[discord.Message] = asyncio.get_running_loop().create_future()

    @bot.listen("on_message")
    async def keep(message: discord.Message) -> None:
        if message.content == "run the tests" and not received.done():
            received.set_result(message)

    await fake.inject_message("run the tests", attachments={"notes.txt": b"hello"})
    message = await asyncio.wait_for(received, 5)
    assert await message.attachments[0].read() == b"hello"
    await message.add_reaction("⏳")
    async with message.channel.typing():
        status = await message.channel.send("running tests…")
    await status.edit(content="ran tests")
    await message.remove_reaction("⏳", bot.user)
    await message.add_reaction("✅")
    await status.delete()
    await message.channel.send(file=discord.File(io.BytesIO(b"log"), filename="output.log"))

    channel, mid = f"/channels/{message.channel.id}", message.id
    echo = f"echo: {message.content}"
    seen = [
        (c.method, c.path)
        for c in fake.log
        if c.method in ("POST", "PUT", "PATCH", "DELETE")
        and c.path.startswith(channel)
        and not (isinstance(c.body, dict) and c.body.get("content") == echo)
    ]
    assert seen == [
        ("PUT", f"{channel}/messages/{mid}/reactions/⏳/@me"),
        ("POST", f"{channel}/typing"),
        ("POST", f"{channel}/messages"),
        ("PATCH", f"{channel}/messages/{status.id}"),
        ("DELETE", f"{channel}/messages/{mid}/reactions/⏳/@me"),
        ("PUT", f"{channel}/messages/{mid}/reactions/✅/@me"),
        ("DELETE", f"{channel}/messages/{status.id}"),
        ("POST", f"{channel}/messages"),
    ]
    upload = fake.calls("POST", f"{channel}/messages")[-1]
    assert upload.files == ("output.log",)


async def test_message_over_2000_characters_is_refused_like_discord(running):
    fake, bot = running
    channel = bot.get_channel(int(fake.world.channel_id))
    with pytest.raises(discord.HTTPException) as refused:
        await channel.send("x" * 2001)
    assert refused.value.status == 400


async def test_late_interaction_answer_is_refused_like_discord(running):
    fake, _ = running
    fake.rest.interaction_deadline = -1.0  # every answer is "too late"
    message = fake.world.message(fake.world.channel_id, "Allow?")
    interaction = await fake.inject_button(APPROVE_ID, message=message)
    path = f"/interactions/{interaction['id']}/{interaction['token']}/callback"
    late = await fake.wait_for_call("POST", path)
    assert late.status == 404 and late.response["code"] == 10062


async def test_slash_command_interaction_is_answered(running):
    fake, _ = running
    await fake.wait_for_call("PUT", f"/applications/{fake.world.application_id}/commands")
    interaction = await fake.inject_slash_command(
        "prompt", [command_option("text", "fix it"), command_option("file", "src/a.py")]
    )
    answer = await fake.wait_for_interaction_answer(interaction)
    assert answer.body["type"] == 4
    assert answer.body["data"]["content"] == "prompt 'fix it' with src/a.py"


async def test_autocomplete_returns_at_most_25_choices(running):
    fake, _ = running
    await fake.wait_for_call("PUT", f"/applications/{fake.world.application_id}/commands")
    interaction = await fake.inject_autocomplete(
        "prompt", [command_option("text", "x"), command_option("file", "ma", focused=True)]
    )
    answer = await fake.wait_for_interaction_answer(interaction)
    assert answer.body["type"] == 8
    choices = answer.body["data"]["choices"]
    assert len(choices) == 25
    assert choices[0] == {"name": "src/ma0.py", "value": "src/ma0.py"}


async def test_button_click_reaches_the_persistent_view(running):
    fake, _ = running
    message = fake.world.message(
        fake.world.channel_id,
        "Allow `rm -rf build`?",
        extra={"components": [button_row(APPROVE_ID, "Approve")]},
    )
    interaction = await fake.inject_button(APPROVE_ID, message=message, user_payload=fake.world.bob)
    answer = await fake.wait_for_interaction_answer(interaction)
    assert answer.body["data"]["content"] == "approved by bob"


async def test_modal_is_opened_and_its_submit_parsed(running):
    fake, _ = running
    await fake.wait_for_call("PUT", f"/applications/{fake.world.application_id}/commands")
    invocation = await fake.inject_slash_command("ask")
    opened = await fake.wait_for_interaction_answer(invocation)
    assert opened.body["type"] == 9 and opened.body["data"]["custom_id"] == "rawp:ask:turn-1"
    submit = await fake.inject_modal_submit("rawp:ask:turn-1", {"rawp:answer": "42"})
    answer = await fake.wait_for_interaction_answer(submit)
    assert answer.body["data"]["content"] == "you said 42"


async def test_select_choice_reaches_the_bot(running):
    fake, bot = running
    chosen: list[list[str]] = []

    @bot.listen("on_interaction")
    async def on_choice(interaction: discord.Interaction) -> None:
        if interaction.data.get("custom_id") == "rawp:node":
            chosen.append(interaction.data["values"])
            await interaction.response.defer()

    message = fake.world.message(fake.world.channel_id, "pick a node")
    interaction = await fake.inject_select("rawp:node", ["laptop"], message=message)
    answer = await fake.wait_for_interaction_answer(interaction)
    assert answer.body["type"] == 6 and chosen == [["laptop"]]


async def test_deferred_answer_is_edited_and_followed_up(running):
    fake, bot = running

    @bot.listen("on_interaction")
    async def slow_answer(interaction: discord.Interaction) -> None:
        if interaction.data.get("custom_id") != "slow":
            return
        await interaction.response.defer(thinking=True)
        await interaction.edit_original_response(content="done")
        await interaction.followup.send("and one more thing")

    message = fake.world.message(fake.world.channel_id, "x")
    interaction = await fake.inject_button("slow", message=message)
    answer = await fake.wait_for_interaction_answer(interaction)
    assert answer.body["type"] == 5
    webhook = f"/webhooks/{fake.world.application_id}/{interaction['token']}"
    edit = await fake.wait_for_call("PATCH", webhook + "/messages/@original")
    assert edit.status == 200 and edit.body["content"] == "done"
    followup = await fake.wait_for_call("POST", webhook)
    assert followup.body["content"] == "and one more thing"


async def test_fake_refuses_a_second_callback_for_one_interaction(running):
    fake, _ = running
    message = fake.world.message(fake.world.channel_id, "x")
    interaction = await fake.inject_button(APPROVE_ID, message=message)
    await fake.wait_for_interaction_answer(interaction)
    url = f"{fake.api_base_url}/interactions/{interaction['id']}/{interaction['token']}/callback"
    async with aiohttp.ClientSession() as session, session.post(url, json={"type": 6}) as answer:
        assert answer.status == 400
        assert (await answer.json())["code"] == 40060


async def test_rate_limited_reply_is_delayed_not_lost(running):
    fake, _ = running
    path = f"/channels/{fake.world.channel_id}/messages"
    fake.rate_limit("POST", path, times=1, retry_after=0.3)
    await fake.inject_message("one")
    await fake.inject_message("two")
    await fake.wait_for_call("POST", path, 10, count=2, where=lambda c: c.status == 200)
    attempts = fake.calls("POST", path)
    assert attempts[0].status == 429
    delivered = [c.body["content"] for c in fake.log.successful("POST", path)]
    assert delivered == ["echo: one", "echo: two"]
    assert fake.rate_limits.pending == 0


async def test_sharded_client_finds_the_gateway_through_gateway_bot():
    async with FakeDiscord() as fake:
        # Only the REST base points at the fake: the gateway URL must come from GET /gateway/bot.
        with discord_endpoints(fake.api_base_url, "ws://127.0.0.1:9/not-used"):
            client = discord.AutoShardedClient(
                intents=discord.Intents.default(), guild_ready_timeout=0.05
            )
            ready = asyncio.Event()

            async def on_ready() -> None:
                ready.set()

            client.event(on_ready)
            task = asyncio.create_task(client.start(fake.world.bot_token))
            try:
                await asyncio.wait_for(ready.wait(), 10)
                assert fake.calls("GET", "/gateway/bot")[0].status == 200
                assert fake.calls("WS", "IDENTIFY")[0].body["shard"] == [0, 1]
            finally:
                await client.close()
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.wait_for(task, 5)


async def test_threads_and_buttons_survive_a_bot_restart():
    async with FakeDiscord() as fake:
        with discord_endpoints(fake):
            thread = await fake.add_thread("session 7")
            async with started_bot(fake) as bot:
                assert isinstance(bot.get_channel(int(thread["id"])), discord.Thread)
                approval = await bot.get_channel(int(thread["id"])).send(
                    "Allow?", view=ApprovalView()
                )
            async with started_bot(fake) as restarted:
                again = restarted.get_channel(int(thread["id"]))
                assert isinstance(again, discord.Thread) and again.name == "session 7"
                message = fake.rest.messages[str(approval.id)]
                assert message["components"][0]["components"][0]["custom_id"] == APPROVE_ID
                click = await fake.inject_button(APPROVE_ID, message=message)
                answer = await fake.wait_for_interaction_answer(click)
                assert answer.body["data"]["content"] == "approved by alice"
            assert len(fake.calls("WS", "IDENTIFY")) == 2


async def test_without_privileged_intents_members_come_with_messages_and_content_is_hidden():
    async with FakeDiscord() as fake:
        with discord_endpoints(fake):
            async with started_bot(fake, members_intent=False, content_intent=False) as bot:
                guild = bot.get_guild(int(fake.world.guild_id))
                assert guild.get_member(int(fake.world.alice["id"])) is None  # not chunked
                assert fake.calls("WS", "REQUEST_GUILD_MEMBERS") == []
                seen: asyncio.Future[discord.Message] = asyncio.get_running_loop().create_future()

                @bot.listen("on_message")
                async def keep(message: discord.Message) -> None:
                    if not seen.done():
                        seen.set_result(message)

                await fake.inject_message("who am I")
                message = await asyncio.wait_for(seen, 5)
                assert isinstance(message.author, discord.Member)
                assert [r.name for r in message.author.roles] == ["@everyone", "rawp-operator"]
                # ...and without the message-content intent the content is blanked, as on Discord
                assert message.content == ""


async def test_a_repeated_nonce_with_enforce_nonce_returns_the_first_message(running):
    fake, bot = running
    channel = bot.get_channel(int(fake.world.channel_id))
    first = await channel.send("chunk 1", nonce="k-1")  # discord.py adds enforce_nonce
    again = await channel.send("chunk 1", nonce="k-1")
    other = await channel.send("chunk 2", nonce="k-2")
    assert again.id == first.id and other.id != first.id
    posts = fake.calls("POST", f"/channels/{fake.world.channel_id}/messages")
    assert [c.body["enforce_nonce"] for c in posts] == [True, True, True]
    assert [m["content"] for m in fake.rest.messages.values()].count("chunk 1") == 1
