"""Discord sharding (issue 19 §4; adapters.discord.shards): the settings, and real discord.py
clients against the fake Discord with guilds on every shard.

In this process: two bots each running half of four shards serve every guild, each guild by
the bot holding its shard; the commands are synced once (by shard 0's bot); a render-only
replica posts without a gateway connection; `auto` takes Discord's recommended count. The
same must-hold with two real `rawp gateway` processes: tests/gateway/test_discord_shards_e2e.py.
"""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters.discord import DiscordBot
from adapters.discord.settings import DiscordSettings
from adapters.discord.shards import ShardPlan, parse_shard_ids, shard_of
from gateway.platform import ConversationRef
from runtime.settings import SettingError
from tests.adapters.chat_support import RecordingHooks
from tests.adapters.discord_support import settings_for
from tests.fakes.discord_payloads import DiscordWorld
from tests.fakes.discord_server import FakeDiscord, discord_endpoints

SHARDS = 4

# --- settings -------------------------------------------------------------------------------


def plan(**env: str) -> ShardPlan:
    return DiscordSettings.from_env({"DISCORD_BOT_TOKEN": "t", **env}).shard_plan


def test_by_default_one_shard_of_one_on_a_plain_client():
    default = plan()
    assert (default.count, default.ids) == (1, None)
    assert not default.sharded and default.connects and default.syncs_commands


@pytest.mark.parametrize(
    ("ids", "expected", "syncs"),
    [("all", None, True), ("2, 3", (2, 3), False), ("1,0,1", (0, 1), True), ("none", (), False)],
)
def test_shard_ids_are_read(ids, expected, syncs):
    read = plan(DISCORD_SHARD_COUNT="4", DISCORD_SHARD_IDS=ids)
    assert read.ids == expected and read.count == 4 and read.sharded
    assert read.syncs_commands is syncs  # only the replica running shard 0 syncs commands
    assert read.connects is (expected != ())


def test_auto_count_runs_every_shard():
    auto = plan(DISCORD_SHARD_COUNT="auto")
    assert (auto.count, auto.ids, auto.sharded) == (None, None, True)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"DISCORD_SHARD_COUNT": "4", "DISCORD_SHARD_IDS": "1,4"},
            "DISCORD_SHARD_IDS: shard 4 does not exist with DISCORD_SHARD_COUNT=4 (ids go "
            "from 0 to 3)",
        ),
        (
            {"DISCORD_SHARD_IDS": "1"},
            "DISCORD_SHARD_IDS: shard 1 does not exist with "
            "DISCORD_SHARD_COUNT=1 (ids go from 0 to 0)",
        ),
        (
            {"DISCORD_SHARD_COUNT": "auto", "DISCORD_SHARD_IDS": "0"},
            "DISCORD_SHARD_IDS=0 needs a number in DISCORD_SHARD_COUNT, not auto",
        ),
        (
            {"DISCORD_SHARD_IDS": "zero"},
            "DISCORD_SHARD_IDS: expected all, none, auto or comma-separated shard ids, got 'zero'",
        ),
        ({"DISCORD_SHARD_COUNT": "0"}, "DISCORD_SHARD_COUNT: expected a number of shards ≥ 1"),
    ],
)
def test_a_bad_shard_setting_is_one_line_naming_it(env, message):
    with pytest.raises(SettingError) as refused:
        plan(**env)
    assert str(refused.value).startswith(message)
    assert "\n" not in str(refused.value)


@given(
    st.lists(st.integers(min_value=0, max_value=10_000), max_size=20),
    st.sampled_from([",", ", ", " , "]),
)
def test_any_written_id_list_reads_back_sorted_and_unique(ids, separator):
    written = separator.join(f" {i} " for i in ids) if ids else "none"
    assert parse_shard_ids(written) == tuple(sorted(set(ids)))


# --- real clients against the fake ----------------------------------------------------------


def world_on_every_shard(count: int = SHARDS) -> tuple[DiscordWorld, list[tuple[str, str]]]:
    """A world with one guild on each shard: [(guild id, channel id)] by shard. Discord lets
    it identify 16 shards at once (a large bot's max_concurrency), so no 5 s waits."""
    world = DiscordWorld(max_concurrency=16)
    guilds = [world.add_guild(f"guild {i}", shard=i, shard_count=count) for i in range(count)]
    assert [shard_of(int(g), count) for g, _ in guilds] == list(range(count))
    return world, guilds


class Hooks(RecordingHooks):
    """Also records the messages addressed to the bot (mentions, DMs)."""

    async def start_here(self, invocation, request):
        self.calls.append(("here", invocation, request))
        return "noted"


@contextlib.asynccontextmanager
async def bots(fake: FakeDiscord, *plans: tuple[str, str]):
    """Bots with (DISCORD_SHARD_COUNT, DISCORD_SHARD_IDS) each, past on_ready: [(bot, hooks)]."""
    made: list[tuple[DiscordBot, Hooks]] = []
    with discord_endpoints(fake):
        try:
            for count, ids in plans:
                settings = settings_for(fake)
                shards = {"shard_count": count, "shard_ids": ids}
                settings = DiscordSettings(**{**settings.model_dump(), **shards})
                hooks = Hooks()
                made.append((DiscordBot(settings, hooks, guild_ready_timeout=0.05), hooks))
            # Together: discord.py waits 5 s between one client's IDENTIFYs, not across clients.
            await asyncio.gather(*(bot.run_in_background(ready_timeout=30) for bot, _ in made))
            yield made
        finally:
            for bot, _ in made:
                await bot.close()


def reached(hooks: Hooks, what: str) -> set[str]:
    """The channels from which `what` ("nodes": `/rawp nodes`; "here": a mention or a DM)
    reached this bot."""
    return {call[1].conversation.channel_id for call in hooks.calls if call[0] == what}


async def ask_nodes(fake: FakeDiscord, channel_id: str) -> str:
    """`/rawp nodes` in a channel; its private answer's text."""
    command = await fake.inject_slash_command(
        "rawp", [{"type": 1, "name": "nodes", "options": []}], channel_id=channel_id
    )
    path = f"/webhooks/{fake.world.application_id}/{command['token']}"
    answer = await fake.wait_for_call("POST", path, timeout=15)
    return str(answer.body.get("content"))


async def test_two_bots_each_running_half_of_four_shards_serve_every_guild():
    world, guilds = world_on_every_shard()
    async with FakeDiscord(world) as fake, bots(fake, ("4", "0,1"), ("4", "2,3")) as running:
        (_, low_hooks), (_, high_hooks) = running
        identified = sorted(tuple(c.body["shard"]) for c in fake.calls("WS", "IDENTIFY"))
        assert identified == [(i, SHARDS) for i in range(SHARDS)]
        for _, channel_id in guilds:
            assert await ask_nodes(fake, channel_id) == "laptop · online"
        channels = [channel_id for _, channel_id in guilds]
        assert reached(low_hooks, "nodes") == set(channels[:2])
        assert reached(high_hooks, "nodes") == set(channels[2:])
        # Messages too: a mention in each guild reaches the bot holding the guild's shard.
        for channel_id in channels:
            await fake.inject_mention("hello", channel_id=channel_id)
            reply = await fake.wait_for_call("POST", f"/channels/{channel_id}/messages", timeout=15)
            assert reply.body["content"] == "noted"
        assert reached(low_hooks, "here") == set(channels[:2])
        assert reached(high_hooks, "here") == set(channels[2:])
        # A direct message arrives on shard 0, as on Discord.
        dm = await fake.inject_dm("hello")
        await fake.wait_for_call("POST", f"/channels/{dm['channel_id']}/messages", timeout=15)
        assert dm["channel_id"] in reached(low_hooks, "here")
        assert dm["channel_id"] not in reached(high_hooks, "here")
        # One registration of the commands, by the bot holding shard 0.
        assert len(fake.calls("PUT", "/applications/*/commands")) == 1


async def test_a_render_only_replica_posts_without_a_gateway_connection():
    world, guilds = world_on_every_shard()
    async with FakeDiscord(world) as fake, bots(fake, ("4", "none")) as running:
        ((bot, _),) = running
        conversation = ConversationRef("discord", guilds[3][1], None)
        sent = await bot.platform.send_message(conversation, "rendered elsewhere")
        assert fake.calls("POST", f"/channels/{guilds[3][1]}/messages")[0].body["content"] == (
            "rendered elsewhere"
        )
        assert sent.message_id
        assert fake.calls("WS", "CONNECT") == [] and fake.calls("WS", "IDENTIFY") == []
        assert fake.calls("PUT", "/applications/*/commands") == []  # shard 0 runs elsewhere


async def test_auto_takes_discords_recommended_count():
    world, guilds = world_on_every_shard(2)
    world.recommended_shards = 2
    world.max_concurrency = 1  # Discord's default: the second IDENTIFY waits its 5 s
    async with FakeDiscord(world) as fake, bots(fake, ("auto", "all")) as running:
        ((_, hooks),) = running
        assert fake.calls("GET", "/gateway/bot")
        identified = sorted(tuple(c.body["shard"]) for c in fake.calls("WS", "IDENTIFY"))
        assert identified == [(0, 2), (1, 2)]
        for _, channel_id in guilds:
            assert await ask_nodes(fake, channel_id) == "laptop · online"
        assert reached(hooks, "nodes") == {channel_id for _, channel_id in guilds}
