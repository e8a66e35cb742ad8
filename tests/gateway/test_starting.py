"""Which machine and agent a mention or a DM starts on (gateway.sessions.starting rule 3): plain
data in, a choice or a one-line question out; the remembered default in the real store."""

from __future__ import annotations

from hypothesis import assume, given
from hypothesis import strategies as st

from gateway.sessions.starting import (
    NO_MACHINES,
    Target,
    choose,
    inline_choice,
    take_worktree_flag,
)
from gateway.storage.conversation_store import ConversationStore
from rawp.fileref import compose, unescape
from rawp.rest import NodeInfo


def node(node_id: str, device_name: str) -> NodeInfo:
    """A node as the Edge API's listing gives it (rawp.rest)."""
    return NodeInfo(
        node_id=node_id, device_name=device_name, status="online",
        last_seen="2026-12-01T09:30:00.000Z", active_sessions_count=0,
    )  # fmt: skip


LAPTOP = node("n-laptop", "Laptop")
DESKTOP = node("n-desk", "desktop")
AGENTS = ("demo", "claude")


def test_the_only_machine_and_the_only_agent_need_no_words():
    assert choose("fix it", [LAPTOP], ("demo",), None) == Target(LAPTOP, "demo", "fix it")


def test_on_names_the_machine_and_agent_and_leaves_the_prompt():
    chosen = choose("on desktop claude fix the tests", [LAPTOP, DESKTOP], AGENTS, None)
    assert chosen == Target(DESKTOP, "claude", "fix the tests")
    # Any case, by id too, a trailing comma or colon ignored; an unknown agent word is text.
    chosen = choose("On LAPTOP: please look", [LAPTOP, DESKTOP], AGENTS, ("n-desk", "demo"))
    assert chosen == Target(LAPTOP, "demo", "please look")
    assert choose("on n-desk, demo", [LAPTOP, DESKTOP], AGENTS, None) == Target(DESKTOP, "demo", "")


def test_the_last_start_is_the_default_while_its_machine_is_still_yours():
    remembered = ("n-desk", "claude")
    assert choose("go", [LAPTOP, DESKTOP], AGENTS, remembered) == Target(DESKTOP, "claude", "go")
    # Its machine is gone: the only one left, with the agent remembered.
    assert choose("go", [LAPTOP], AGENTS, remembered) == Target(LAPTOP, "claude", "go")


def test_what_cannot_be_chosen_is_asked_in_one_line():
    machine = choose("fix it", [LAPTOP, DESKTOP], AGENTS, None)
    assert isinstance(machine, str) and "\n" not in machine
    assert machine.startswith("Which machine?") and "Laptop, desktop" in machine
    agent = choose("fix it", [LAPTOP], AGENTS, None)
    assert agent.startswith("Which agent?") and "on Laptop <agent>" in agent
    assert "demo, claude" in agent
    assert choose("fix it", [], AGENTS, None) == NO_MACHINES


def test_on_followed_by_no_machine_of_yours_is_plain_text():
    text = "on second thought, fix the tests"
    assert inline_choice(text, [LAPTOP, DESKTOP], AGENTS) == (None, None, text)
    assert choose(text, [LAPTOP], ("demo",), None) == Target(LAPTOP, "demo", text)


words = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)


@given(words)
def test_text_that_does_not_begin_with_on_is_left_whole(typed):
    assume(not typed.split() or typed.split()[0].casefold() != "on")
    text = compose([typed])
    assert inline_choice(text, [LAPTOP], AGENTS) == (None, None, text)


@given(words)
def test_the_rest_keeps_what_the_user_typed_escapes_included(typed):
    text = compose([f"on laptop claude {typed}"])
    node, agent, rest = inline_choice(text, [LAPTOP], AGENTS)
    assert (node, agent) == (LAPTOP, "claude")
    assert unescape(rest) == typed.lstrip()


async def test_the_store_remembers_each_subjects_last_start(tmp_path):
    store = await ConversationStore.open(tmp_path / "c.sqlite3")
    try:
        assert await store.last_start("discord:1") is None
        await store.remember_start("discord:1", "n-laptop", "demo")
        await store.remember_start("discord:1", "n-desk", "claude")
        await store.remember_start("slack:T:U", "n-laptop", "demo")
        assert await store.last_start("discord:1") == ("n-desk", "claude")
        assert await store.last_start("slack:T:U") == ("n-laptop", "demo")
    finally:
        await store.close()


def test_a_worktree_word_asks_for_a_worktree_and_leaves_the_prompt():
    # Issue 30 §3: only the whole word counts, anywhere in the starting message.
    assert take_worktree_flag("--worktree fix it") == ("fix it", True)
    assert take_worktree_flag("on laptop claude --worktree fix it") == (
        "on laptop claude fix it",
        True,
    )
    assert take_worktree_flag("fix it --worktree") == ("fix it", True)
    assert take_worktree_flag("fix --worktrees and a--worktree") == (
        "fix --worktrees and a--worktree",
        False,
    )
