"""The client's pure parts, by property: frame splitting, the replay buffer, tickets, and the
claude-code kind's bounded inbox."""

from __future__ import annotations

import asyncio
import itertools

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from client.agents.claude_wire import EOF, INBOX_MAX, Inbox
from client.link.tickets import TicketStore
from client.sessions.buffer import FrameBuffer
from client.sessions.chunking import TRUNCATION_NOTE, encoded_size, shorten, split_text
from rawp.clock import FakeClock, new_id
from rawp.errors import Unauthorized


@given(text=st.text(max_size=3000), budget=st.integers(min_value=6, max_value=400))
def test_split_text_pieces_fit_and_join_back(text, budget):
    pieces = list(split_text(text, budget))
    assert "".join(pieces) == text
    assert all(encoded_size(p) <= budget for p in pieces)
    assert all(pieces) or pieces == [""]
    # Greedy: each piece but the last could not take the next character.
    for piece, after in itertools.pairwise(pieces):
        assert encoded_size(piece + after[0]) > budget


def test_encoded_size_counts_json_escapes():
    assert encoded_size("a") == 1 and encoded_size("\n") == 2 and encoded_size("\x00") == 6
    assert encoded_size("한") == 3 and encoded_size('"') == 2
    assert encoded_size("a\nb") == len(orjson.dumps("a\nb")) - 2


@given(text=st.text(min_size=1, max_size=2000), budget=st.integers(min_value=60, max_value=500))
def test_shorten_fits_and_keeps_a_prefix(text, budget):
    short = shorten(text, budget)
    assert encoded_size(short) <= budget
    assert short.endswith(TRUNCATION_NOTE)
    assert text.startswith(short[: -len(TRUNCATION_NOTE)])


def test_split_text_refuses_a_budget_that_cannot_carry_a_character():
    with pytest.raises(ValueError):
        list(split_text("abc", 5))


FRAMES = st.lists(st.integers(min_value=1, max_value=300), min_size=1, max_size=60)


@given(sizes=FRAMES, policy=st.sampled_from(["RING", "DROP"]), cap=st.integers(300, 3000))
def test_buffer_never_exceeds_its_bytes_and_keeps_order(sizes, policy, cap):
    buffer = FrameBuffer(cap, policy)
    ids = []
    for size in sizes:
        ids.append(new_id())
        buffer.add(ids[-1], "x" * size)
        assert buffer.bytes <= cap
        assert buffer.bytes == sum(f.size for f in buffer.frames)
    kept = [f.message_id for f in buffer.frames]
    assert kept == [i for i in ids if i in kept]  # original order
    if policy == "RING":
        assert kept == ids[len(ids) - len(kept) :]  # the newest survive
    else:
        assert kept == ids[: len(kept)]  # the oldest survive
    assert buffer.take_dropped() == len(ids) - len(kept)
    assert buffer.dropped == 0


def test_a_live_socket_makes_room_without_counting_drops():
    buffer = FrameBuffer(100, "DROP")
    assert buffer.add("a", "x" * 60, live=True) is not None
    assert buffer.add("b", "y" * 60, live=True) is not None
    assert [f.message_id for f in buffer.frames] == ["b"] and buffer.dropped == 0


def test_sent_frames_make_room_before_unsent_ones_are_lost():
    buffer = FrameBuffer(100, "DROP")
    first = buffer.add("a", "x" * 60)
    first.sent = True
    assert buffer.add("b", "y" * 60) is not None  # the sent frame made room
    assert [f.message_id for f in buffer.frames] == ["b"] and buffer.dropped == 0


def test_replay_after_a_cursor_and_without_one():
    buffer = FrameBuffer(10_000, "RING")
    for name in "abcd":
        entry = buffer.add(name, name)
        entry.sent = name in "ab"
    assert [f.message_id for f in buffer.replay_after("a")] == ["b", "c", "d"]
    assert [f.message_id for f in buffer.replay_after("d")] == []
    assert [f.message_id for f in buffer.replay_after(None)] == ["c", "d"]
    assert [f.message_id for f in buffer.replay_after("gone")] == ["c", "d"]


def test_tickets_are_single_use_expire_and_bind_one_session():
    clock = FakeClock()
    store = TicketStore(clock, 60)
    store.register("t1", "s1")
    with pytest.raises(Unauthorized):
        store.burn("t1", "s2")  # wrong session: refused, and the ticket is burned
    with pytest.raises(Unauthorized):
        store.burn("t1", "s1")
    store.register("t2", "s1")
    assert store.pending_for("s1")
    clock.advance(60)
    assert not store.pending_for("s1")
    with pytest.raises(Unauthorized, match=r"expired|unknown"):
        store.burn("t2", "s1")
    store.register("t3", "s1")
    store.register("t4", "s1")  # a new init supersedes the unused ticket
    with pytest.raises(Unauthorized):
        store.burn("t3", "s1")
    assert store.burn("t4", "s1") == "s1"
    assert "t4" not in repr(store._tickets)  # only fingerprints are kept


async def test_claude_code_inbox_is_bounded_and_ends_after_its_last_message():
    """The CLI's reader waits when a turn does not keep up (issue 14 §6), and the end of the
    process is seen after every message it wrote, however full the inbox was."""
    inbox = Inbox()
    for n in range(INBOX_MAX):
        await inbox.put({"n": n})
    blocked = asyncio.ensure_future(inbox.put({"n": INBOX_MAX}))
    done, _ = await asyncio.wait({blocked}, timeout=0.05)
    assert not done  # backpressure: the reader (and so the CLI) waits
    assert await inbox.get() == {"n": 0}
    await asyncio.wait_for(blocked, 5)  # room again: the waiting message goes in
    inbox.end()  # the process ended while the inbox was full
    got = [await inbox.get() for _ in range(INBOX_MAX)]
    assert got == [{"n": n} for n in range(1, INBOX_MAX + 1)]
    assert await inbox.get() is EOF and await inbox.get() is EOF

    waiting = Inbox()
    reader = asyncio.ensure_future(waiting.get())
    done, _ = await asyncio.wait({reader}, timeout=0.05)
    assert not done
    waiting.end()  # a turn waiting on an empty inbox is woken by the end
    assert await asyncio.wait_for(reader, 5) is EOF
