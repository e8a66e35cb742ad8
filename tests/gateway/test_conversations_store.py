"""The conversation ↔ session store on a real SQLite file and a real PostgreSQL (issue 19 §1),
and who a chat user is."""

from __future__ import annotations

import asyncio
import stat

from adapters.console.platform import ConsolePlatform
from adapters.discord.platform import DiscordPlatform
from adapters.slack.platform import SlackPlatform
from gateway.platform import ConversationRef, Invocation
from gateway.sessions.conversations import subject_of
from gateway.storage.conversation_store import INTENT, ConversationStore
from rawp.clock import FakeClock
from tests.gateway import store_support

store_target = store_support.store_target  # SQLite and PostgreSQL

THREAD = ConversationRef("discord", "chan-1", "thread-1")


async def test_a_binding_survives_reopening_the_store(store_target):
    store = await ConversationStore.open(store_target)
    await store.bind(THREAD, subject="discord:1", session_id="s1", node_id="n1", agent_name="demo")
    await store.close()

    again = await ConversationStore.open(store_target)
    try:
        binding = await again.get(THREAD)
        assert (binding.session_id, binding.node_id, binding.agent_name) == ("s1", "n1", "demo")
        assert binding.conversation == THREAD and not binding.ended
        assert [b.session_id for b in await again.open_bindings()] == ["s1"]
    finally:
        await again.close()
    if not isinstance(store_target, str):  # the SQLite file names users: only its owner reads
        assert stat.S_IMODE(store_target.stat().st_mode) == 0o600


async def test_ending_marks_and_a_new_session_replaces(store_target):
    store = await ConversationStore.open(store_target)
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


async def test_the_channel_lookup_finds_the_users_newest_open_thread(store_target):
    clock = FakeClock()
    store = await ConversationStore.open(store_target, clock)
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


async def test_bindings_made_in_one_instant_keep_the_order_they_were_made_in(store_target):
    clock = FakeClock()  # never advanced: created_at ties, the insertion order decides
    store = await ConversationStore.open(store_target, clock)
    try:
        for n in (1, 2, 3):
            thread = ConversationRef("slack", "C1", f"ts{n}")
            await store.bind(thread, subject="u", session_id=f"s{n}", node_id="n", agent_name="a")
        in_channel = ConversationRef("slack", "C1")
        assert (await store.latest_in_channel(in_channel, "u")).session_id == "s3"
        # a thread bound again is the newest, as INSERT OR REPLACE made it
        await store.bind(
            ConversationRef("slack", "C1", "ts1"),
            subject="u",
            session_id="s4",
            node_id="n",
            agent_name="a",
        )
        assert (await store.latest_in_channel(in_channel, "u")).session_id == "s4"
        assert [b.session_id for b in await store.open_bindings()] == ["s2", "s3", "s4"]
    finally:
        await store.close()


async def test_queued_prompts_come_back_in_the_order_recorded(store_target):
    store = await ConversationStore.open(store_target)
    try:
        for prompt in ("p9", "p1", "p5"):
            await store.record_queued("s1", prompt, f"m-{prompt}", "U1")
        await store.record_queued("s2", "p0", None, None)
        assert [p for p, _, _ in await store.queued("s1")] == ["p9", "p1", "p5"]
        await store.record_queued("s1", "p9", "m-again", "U2")  # recorded again: last
        assert await store.queued("s1") == [
            ("p1", "m-p1", "U1"),
            ("p5", "m-p5", "U1"),
            ("p9", "m-again", "U2"),
        ]
        await store.forget_queued("s1", ["p1", "p9"])
        assert await store.queued("s1") == [("p5", "m-p5", "U1")]
        assert await store.queued("s2") == [("p0", None, None)]
    finally:
        await store.close()


async def test_an_intent_never_overwrites_a_recorded_post_even_from_another_replica(store_target):
    first = await ConversationStore.open(store_target)
    second = await ConversationStore.open(store_target)  # another replica on the same database
    try:
        await asyncio.gather(*(s.record_intent("s1", "k/0") for s in (first, second) * 4))
        assert await first.recorded("s1", "k/0") == INTENT
        await second.record_post("s1", "k/0", "m-1")
        await first.record_intent("s1", "k/0")  # late: the message id stays
        assert await first.recorded("s1", "k/0") == "m-1"
        await first.forget_post("s1", "k/0")
        assert await second.recorded("s1", "k/0") is None
    finally:
        await first.close()
        await second.close()


async def test_two_replicas_writing_at_once_lose_nothing(store_target):
    first = await ConversationStore.open(store_target)
    second = await ConversationStore.open(store_target)
    try:
        stores = (first, second) * 10
        await asyncio.gather(
            *(s.record_queued("s1", f"p{n:02}", None, None) for n, s in enumerate(stores)),
            *(s.record_post("s1", f"k/{n}", f"m{n}") for n, s in enumerate(stores)),
            *(
                s.bind(THREAD, subject="u", session_id=f"s{n}", node_id="n", agent_name="a")
                for n, s in enumerate(stores)
            ),
        )
        assert sorted(p for p, _, _ in await second.queued("s1")) == [f"p{n:02}" for n in range(20)]
        assert [await first.recorded("s1", f"k/{n}") for n in range(20)] == [
            f"m{n}" for n in range(20)
        ]
        assert len(await first.open_bindings()) == 1  # one thread, one row: the last bind won
    finally:
        await first.close()
        await second.close()


async def test_settings_defaults_origins_and_cursors_are_replaced_in_place(store_target):
    store = await ConversationStore.open(store_target)
    try:
        assert await store.busy_mode("slack", "C1") is None
        await store.set_busy_mode("slack", "C1", "queue")
        await store.set_busy_mode("slack", "C1", "interrupt")
        assert await store.busy_mode("slack", "C1") == "interrupt"
        assert await store.last_start("discord:1") is None
        await store.remember_start("discord:1", "n1", "demo")
        await store.remember_start("discord:1", "n2", "other")
        assert await store.last_start("discord:1") == ("n2", "other")
        await store.record_turn_origin("s1", "t1", "m1", "U1")
        await store.record_turn_origin("s1", "t1", "m2", None)
        assert await store.turn_origin("s1", "t1") == ("m2", None)
        assert await store.turn_origin("s1", "t2") == (None, None)
        await store.save_cursor("s1", "f-1")
        await store.save_cursor("s1", "f-2")
        assert await store.cursor("s1") == "f-2"
        await store.record_post("s1", "f-2/0", "m-9")
        await store.record_queued("s1", "p1", None, None)
        await store.bind(THREAD, subject="discord:1", session_id="s1", node_id="n", agent_name="a")
        await store.mark_ended("s1")  # the session's bookkeeping goes with it, settings stay
        assert await store.cursor("s1") is None and await store.recorded("s1", "f-2/0") is None
        assert await store.turn_origin("s1", "t1") == (None, None)
        assert await store.queued("s1") == []
        assert await store.busy_mode("slack", "C1") == "interrupt"
        assert await store.last_start("discord:1") == ("n2", "other")
    finally:
        await store.close()


async def test_choices_outlive_the_end_and_move_to_the_resuming_session(store_target):
    """Rendering records go with an ended session; the mode and model chosen from chat stay
    until a resume moves them (gateway.sessions.resume_command rule 6)."""
    store = await ConversationStore.open(store_target)
    try:
        await store.set_session_mode("s1", "plan")
        await store.choose_model("s1", "opus")
        await store.set_session_mode("s2", "ask")  # s2 had its own: the moved ones win
        await store.mark_ended("s1")
        assert await store.session_mode("s1") == "plan"
        await store.move_choices("s1", "s2")
        assert await store.session_mode("s2") == "plan"
        assert (await store.session_model("s2")).chosen == "opus"
        assert await store.session_mode("s1") is None and await store.session_model("s1") is None
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
