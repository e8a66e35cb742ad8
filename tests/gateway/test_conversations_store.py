"""The conversation ↔ session store on a real SQLite file, and who a chat user is."""

from __future__ import annotations

import stat

from adapters.console.platform import ConsolePlatform
from adapters.discord.platform import DiscordPlatform
from adapters.slack.platform import SlackPlatform
from gateway.conversation_store import ConversationStore
from gateway.conversations import subject_of
from gateway.platform import ConversationRef, Invocation
from rawp.clock import FakeClock

THREAD = ConversationRef("discord", "chan-1", "thread-1")


async def test_a_binding_survives_reopening_the_file(tmp_path):
    path = tmp_path / "gw" / "conversations.sqlite3"
    store = await ConversationStore.open(path)
    await store.bind(THREAD, subject="discord:1", session_id="s1", node_id="n1", agent_name="demo")
    await store.close()

    again = await ConversationStore.open(path)
    try:
        binding = await again.get(THREAD)
        assert (binding.session_id, binding.node_id, binding.agent_name) == ("s1", "n1", "demo")
        assert binding.conversation == THREAD and not binding.ended
        assert [b.session_id for b in await again.open_bindings()] == ["s1"]
    finally:
        await again.close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


async def test_ending_marks_and_a_new_session_replaces(tmp_path):
    store = await ConversationStore.open(tmp_path / "c.sqlite3")
    try:
        await store.bind(THREAD, subject="discord:1", session_id="s1", node_id="n", agent_name="a")
        await store.mark_ended("s1")
        assert (await store.get(THREAD)).ended
        assert await store.open_bindings() == []
        await store.bind(THREAD, subject="discord:1", session_id="s2", node_id="n", agent_name="a")
        fresh = await store.get(THREAD)
        assert (fresh.session_id, fresh.ended) == ("s2", False)
    finally:
        await store.close()


async def test_the_channel_lookup_finds_the_users_newest_open_thread(tmp_path):
    clock = FakeClock()
    store = await ConversationStore.open(tmp_path / "c.sqlite3", clock)
    try:
        for n, subject in ((1, "slack:T:U1"), (2, "slack:T:U1"), (3, "slack:T:U2")):
            clock.advance(1)
            thread = ConversationRef("slack", "C1", f"ts{n}")
            await store.bind(
                thread, subject=subject, session_id=f"s{n}", node_id="n", agent_name="a"
            )
        in_channel = ConversationRef("slack", "C1")
        assert (await store.latest_in_channel(in_channel, "slack:T:U1")).session_id == "s2"
        await store.mark_ended("s2")
        assert (await store.latest_in_channel(in_channel, "slack:T:U1")).session_id == "s1"
        assert await store.latest_in_channel(ConversationRef("slack", "C2"), "slack:T:U1") is None
        # the conversation key keeps a thread id with the separator apart from its channel
        assert await store.get(ConversationRef("slack", "C1\x1fts1")) is None
    finally:
        await store.close()


def test_subjects_follow_the_masters_platform_id_form():
    scoped = {"discord": DiscordPlatform, "slack": SlackPlatform, "console": ConsolePlatform}

    def who(platform, user, workspace=None):
        invocation = Invocation(user, ConversationRef(platform, "c"), None, workspace)
        return subject_of(invocation, scoped[platform].user_ids_per_workspace)

    assert who("discord", "123", "guild-9") == "discord:123"  # Discord ids are global
    assert who("slack", "U2", "T1") == "slack:T1:U2"  # Slack ids are per workspace
    assert who("console", "local") == "console:local"
