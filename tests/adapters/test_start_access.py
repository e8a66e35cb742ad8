"""Mentions and direct messages reach `start_here` on both adapters — and only from users the
allow-lists admit (issue 16 §1). The real discord.py bot and Bolt app against the fake
platforms, with recording hooks at the conversation seam: fast, no master needed."""

from __future__ import annotations

import pytest

from adapters.discord.access import REFUSAL
from adapters.slack.access import REFUSAL as SLACK_REFUSAL
from tests.adapters.chat_support import RecordingHooks
from tests.adapters.discord_support import running_bot
from tests.adapters.slack_support import running_app
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.slack_server import FakeSlack
from tests.gateway.support import eventually


class StartingHooks(RecordingHooks):
    async def start_here(self, invocation, request):
        self.calls.append(("start_here", invocation, request))
        return None


def content(call) -> str:
    return str((call.body or {}).get("content") or "")


# --- Discord -----------------------------------------------------------------------------------


async def test_discord_a_mention_starts_here_without_the_mention_and_other_messages_do_not():
    hooks = StartingHooks()
    async with FakeDiscord() as fake, running_bot(fake, hooks):
        await fake.inject_message("just chatting, not for the bot")
        mention = await fake.inject_mention("fix the failing test")
        await eventually(lambda: hooks.of("start_here"), "start_here")
        [(_, invocation, request)] = hooks.of("start_here")
        assert request.prompt_text == "fix the failing test"
        assert invocation.message.message_id == mention["id"]
        assert invocation.conversation.channel_id == fake.world.channel_id
        assert invocation.conversation.thread_id is None
        assert invocation.workspace_id == fake.world.guild_id


async def test_discord_a_mention_outside_the_allowed_channels_is_ignored():
    hooks = StartingHooks()
    async with FakeDiscord() as fake, running_bot(fake, hooks, allowed_channels={"42"}):
        await fake.inject_mention("fix the failing test")
        dm = await fake.inject_dm("a DM goes through: no guild or channel list names it")
        # The bot allows no DMs here either (a channel list is set): the DM is refused, in it.
        refused = await fake.wait_for_call("POST", f"/channels/{dm['channel_id']}/messages")
        assert content(refused) == REFUSAL
        assert hooks.of("start_here") == []
        assert not fake.calls("POST", f"/channels/{fake.world.channel_id}/messages")
        assert not fake.calls("POST", "/channels/*/messages/*/threads")


async def test_discord_a_dm_starts_here_when_no_list_restricts_or_dms_are_allowed():
    hooks = StartingHooks()
    async with FakeDiscord() as fake, running_bot(fake, hooks):
        await fake.inject_dm("hello in private")
        await eventually(lambda: hooks.of("start_here"), "start_here")
        [(_, invocation, request)] = hooks.of("start_here")
        assert request.prompt_text == "hello in private" and invocation.workspace_id is None
    hooks = StartingHooks()
    guild_only = {"allowed_guilds": {"1"}, "allow_dms": True}
    async with FakeDiscord() as fake, running_bot(fake, hooks, **guild_only):
        await fake.inject_dm("explicitly allowed")
        await eventually(lambda: hooks.of("start_here"), "start_here")


# --- Slack -------------------------------------------------------------------------------------


async def test_slack_a_top_level_mention_starts_here_without_the_mention():
    hooks = StartingHooks()
    async with FakeSlack() as fake, running_app(fake, hooks) as bot:
        mention = fake.world.app_mention_event("fix the failing test")
        assert (await fake.post_event_to(bot.http_url, mention)).status == 200
        await eventually(lambda: hooks.of("start_here"), "start_here")
        [(_, invocation, request)] = hooks.of("start_here")
        assert request.prompt_text == "fix the failing test"
        assert invocation.message.message_id == mention["ts"]
        assert invocation.conversation.thread_id is None
        assert invocation.workspace_id == fake.world.team_id
        assert not fake.calls("chat.postEphemeral")  # no usage text any more


async def test_slack_a_mention_or_dm_from_outside_the_lists_is_refused_privately():
    hooks = StartingHooks()
    async with FakeSlack() as fake, running_app(fake, hooks, allowed_channels={"C42"}) as bot:
        await fake.post_event_to(bot.http_url, fake.world.app_mention_event("fix it"))
        dm = fake.world.message_event("hello", channel=fake.world.dm_channel_id)
        await fake.post_event_to(bot.http_url, dm)
        notes = await fake.wait_for_call("chat.postEphemeral", count=2)
        refused = [c.body for c in fake.calls("chat.postEphemeral")]
        # Bolt runs listeners after acknowledging, so the two notes may come in either order.
        assert {(r["channel"], r["text"]) for r in refused} == {
            (fake.world.channel_id, SLACK_REFUSAL),
            (fake.world.dm_channel_id, SLACK_REFUSAL),
        }, notes
        assert hooks.of("start_here") == []


async def test_slack_dms_follow_the_team_list_and_the_dm_switch():
    hooks = StartingHooks()
    other_team = {"allowed_teams": {"T0THER"}, "allow_dms": True}
    async with FakeSlack() as fake, running_app(fake, hooks, **other_team) as bot:
        dm = fake.world.message_event("hello", channel=fake.world.dm_channel_id)
        await fake.post_event_to(bot.http_url, dm)
        await fake.wait_for_call("chat.postEphemeral")
        assert hooks.of("start_here") == []
    allowed = {"allowed_channels": {"C42"}, "allow_dms": True}
    async with FakeSlack() as fake, running_app(fake, hooks, **allowed) as bot:
        dm = fake.world.message_event("hello", channel=fake.world.dm_channel_id)
        await fake.post_event_to(bot.http_url, dm)
        await eventually(lambda: hooks.of("start_here"), "start_here")
        [(_, invocation, request)] = hooks.of("start_here")
        assert invocation.conversation.channel_id == fake.world.dm_channel_id
        assert request.prompt_text == "hello"


# --- the DM switches ---------------------------------------------------------------------------


def test_the_dm_switches_read_from_the_environment():
    from adapters.discord import DiscordSettings
    from adapters.slack import SlackSettings

    discord_env = {"DISCORD_BOT_TOKEN": "x"}
    assert DiscordSettings.from_env(discord_env).allow_dms is None
    assert DiscordSettings.from_env({**discord_env, "DISCORD_ALLOW_DMS": "true"}).allow_dms
    assert (
        DiscordSettings.from_env({**discord_env, "DISCORD_ALLOW_DMS": " Off "}).allow_dms is False
    )
    slack_env = {"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xapp-1"}
    assert SlackSettings.from_env({**slack_env, "SLACK_ALLOW_DMS": "1"}).allow_dms is True
    assert SlackSettings.from_env({**slack_env, "SLACK_ALLOW_DMS": ""}).allow_dms is None
    with pytest.raises(ValueError, match=r"^SLACK_ALLOW_DMS: expected 1 or 0 .*got 'sometimes'$"):
        SlackSettings.from_env({**slack_env, "SLACK_ALLOW_DMS": "sometimes"})


def test_the_discord_policy_decides_dms_from_its_lists_unless_told():
    from adapters.discord.access import AccessPolicy, Where

    dm = Where(None, ("55",), frozenset())
    assert AccessPolicy().allows(dm)
    assert not AccessPolicy(allowed_roles=frozenset({"7"})).allows(dm)
    assert AccessPolicy(allowed_guilds=frozenset({"1"}), allow_dms=True).allows(dm)
    assert not AccessPolicy(allow_dms=False).allows(dm)
    # A guild message is judged by the lists alone, whatever the DM switch says.
    assert AccessPolicy(allow_dms=False).allows(Where("1", ("2",), frozenset()))


async def test_the_bots_mention_inside_a_session_thread_is_not_part_of_the_prompt():
    hooks = StartingHooks()
    async with FakeDiscord() as fake, running_bot(fake, hooks):
        thread = await fake.add_thread("demo on laptop")
        await fake.inject_mention("look at this", channel_id=thread["id"])
        await fake.inject_message("plain words", channel_id=thread["id"])
        await eventually(lambda: len(hooks.of("prompt")) == 2, "two prompts")
        texts = sorted(request.prompt_text for _, _, request in hooks.of("prompt"))
        assert texts == ["look at this", "plain words"]
        assert hooks.of("start_here") == []  # a thread is not where sessions start
    hooks = StartingHooks()
    async with FakeSlack() as fake, running_app(fake, hooks) as bot:
        mention = f"<@{fake.world.bot_user_id}> look at this"
        reply = fake.world.message_event(mention, thread_ts="1700000000.000100")
        await fake.post_event_to(bot.http_url, reply)
        await eventually(lambda: hooks.of("prompt"), "the prompt")
        [(_, _, request)] = hooks.of("prompt")
        assert request.prompt_text == "look at this"


async def test_a_thread_opened_on_a_message_still_reacts_on_that_message_in_the_channel():
    """After a restart the renderer knows the turn's message by id only, in the thread's
    conversation; the message a thread was opened on lives in the parent channel."""
    from gateway.platform import ConversationRef, MessageRef

    async with FakeDiscord() as fake, running_bot(fake) as bot:
        mention = await fake.inject_mention("fix it")
        channel = fake.world.channel_id
        on_it = await bot.platform.open_thread_on(
            MessageRef(ConversationRef("discord", channel), mention["id"]), "demo on laptop"
        )
        assert on_it == ConversationRef("discord", channel, mention["id"])
        await bot.platform.add_reaction(MessageRef(on_it, mention["id"]), "✅")
        reacted = await fake.wait_for_call(
            "PUT", f"/channels/{channel}/messages/{mention['id']}/reactions/✅/@me"
        )
        assert reacted.status == 204
