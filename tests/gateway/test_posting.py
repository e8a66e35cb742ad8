"""Keyed posts and the durable cursor on a real SQLite file (issue 14 §4): a renderer started
afresh on the same store and fed the frames after the cursor posts only what is missing, on a
platform that de-duplicates nothing itself."""

from __future__ import annotations

import sqlite3

import pytest

from gateway.edge_link import moves_cursor
from gateway.platform import ConversationRef, MessageRef
from gateway.rendering.posting import Poster
from gateway.rendering.render import RenderOptions, SessionRenderer
from gateway.sessions.live import CURSOR_EVERY_FRAMES, CursorKeeper
from gateway.storage.conversation_store import INTENT, ConversationStore
from tests.gateway.support import RecordingPlatform, frame, settle

THREAD = ConversationRef("recording", "chan", "thread")
SID = "s-1"
STATE = {"previous_state": "idle", "current_state": "thinking"}


@pytest.fixture
async def store(tmp_path):
    opened = await ConversationStore.open(tmp_path / "c.sqlite3")
    try:
        yield opened
    finally:
        await opened.close()


def answer_frames() -> list:
    frames = [frame("session.turn.start", {"turn_id": "turn-1", "prompt_message_id": "p-1"})]
    for index in range(4):
        text = f"block {index} " + "y" * (2500 if index == 2 else 10)  # block 2: two chunks
        frames.append(frame("agent.text.delta", {"content_index": index, "text": text[:5]}))
        frames.append(frame("agent.text.delta", {"content_index": index, "text": text[5:]}))
        frames.append(frame("agent.text.done", {"content_index": index, "text": text}))
    frames.append(frame("session.turn.end", {"turn_id": "turn-1", "stop_reason": "end_turn"}))
    return frames


async def render(store, platform, frames, cursor: CursorKeeper | None = None) -> None:
    renderer = SessionRenderer(platform, THREAD, SID, send_frame=_nowhere, store=store)
    for each in frames:
        await renderer.feed(each)
        if cursor is not None:
            await cursor.rendered(each, renderer.settled)
    await renderer.close()


async def _nowhere(_frame) -> None:
    raise AssertionError("nothing is sent to the session here")


def sent(platform: RecordingPlatform) -> list[str]:
    return [call[1] for call in platform.of("send")]


class Died(BaseException):
    """The gateway process dies here (nothing after it runs, no handler catches it)."""


class DyingPlatform(RecordingPlatform):
    """Dies when asked for its `dies_at`-th post, before making it."""

    def __init__(self, dies_at: int) -> None:
        super().__init__()
        self.dies_at = dies_at

    async def send_message(self, conversation, text):
        if len(self.of("send")) + 1 == self.dies_at:
            raise Died
        return await super().send_message(conversation, text)


@pytest.mark.parametrize("dies_at", range(1, 6))
async def test_rendering_again_after_the_cursor_posts_only_what_is_missing(store, dies_at):
    frames = answer_frames()
    whole = RecordingPlatform()
    await render(None, whole, frames)  # what one uninterrupted gateway posts
    assert len(sent(whole)) == 5  # four blocks, the third in two chunks

    first = DyingPlatform(dies_at)
    with pytest.raises(Died):
        await render(store, first, frames, CursorKeeper(store, SID))
    cursor = await store.cursor(SID)
    at = [f.message_id for f in frames].index(cursor) + 1 if cursor else 0
    # The cursor is a settled frame: never a delta, whose block is still buffered.
    assert at == 0 or frames[at - 1].type != "agent.text.delta"

    second = RecordingPlatform()  # the restarted gateway, replayed what follows the cursor
    await render(store, second, frames[at:])
    assert sent(first) + sent(second) == sent(whole), f"died at post {dies_at}"


async def test_a_post_whose_outcome_was_never_recorded_is_looked_for_first(store):
    class Finding(RecordingPlatform):
        async def find_keyed(self, conversation, key):
            self._record("find", key)
            return MessageRef(conversation, "already-there") if key == "f-1/0" else None

    platform = Finding()
    await store.record_intent(SID, "f-1/0")  # posted, then the gateway died before recording
    await store.record_intent(SID, "f-1/1")  # died before posting
    poster = Poster(platform, THREAD, SID, store)
    poster.begin("f-1")
    assert (await poster.send("one")).message_id == "already-there"
    second = await poster.send("two")
    assert [c[0] for c in platform.calls] == ["find", "find", "send"]
    assert await store.recorded(SID, "f-1/1") == second.message_id
    assert await store.recorded(SID, "f-2/0") is None
    await store.record_intent(SID, "f-2/0")
    assert await store.recorded(SID, "f-2/0") == INTENT


async def test_the_cursor_is_written_spaced_out_and_at_block_ends(store):
    keeper = CursorKeeper(store, SID)
    deltas = [frame("agent.state.changed", STATE) for _ in range(10)]
    for each in deltas:
        await keeper.rendered(each, settled=True)
    assert await store.cursor(SID) in (None, deltas[0].message_id)  # not one write per frame
    done = frame("agent.text.done", {"content_index": 0, "text": "x"})
    await keeper.rendered(done, settled=True)
    assert await store.cursor(SID) == done.message_id
    many = [frame("agent.state.changed", STATE)] * CURSOR_EVERY_FRAMES
    await keeper.rendered(frame("agent.text.done", {"content_index": 1, "text": "y"}), False)
    assert await store.cursor(SID) == done.message_id  # unsettled: the cursor stays
    for each in many:
        await keeper.rendered(each, settled=True)
    assert await store.cursor(SID) == many[-1].message_id


def test_only_client_frames_move_the_cursor():
    assert moves_cursor(frame("agent.text.done", {"content_index": 0, "text": "x"}))
    # The client's greeting too: its place is known, and it is a new session's only cursor.
    assert moves_cursor(frame("tool.catalog.publish", {"tools": []}))
    made_by_master = [
        frame("session.history", {"since_message_id": "m", "replayed": 0, "dropped": 0}),
        frame("session.error", {"code": "CLIENT_UNAVAILABLE", "message": "gone"}),
        frame("node.config.changed", {"node_id": "n", "changed_scope": "limits",
                                      "config_version": 2, "reason": "edited"}),
    ]  # fmt: skip
    assert not any(moves_cursor(each) for each in made_by_master)


async def test_a_file_from_before_the_cursor_tables_gets_them(tmp_path):
    path = tmp_path / "old.sqlite3"
    with sqlite3.connect(path) as old:  # the schema before issue 14
        old.execute(
            "CREATE TABLE conversations (conversation_key TEXT PRIMARY KEY, platform TEXT NOT"
            " NULL, channel_id TEXT NOT NULL, thread_id TEXT, subject TEXT NOT NULL, session_id"
            " TEXT NOT NULL, node_id TEXT NOT NULL, agent_name TEXT NOT NULL, created_at TEXT"
            " NOT NULL, ended INTEGER NOT NULL DEFAULT 0)"
        )
    store = await ConversationStore.open(path)
    try:
        await store.save_cursor(SID, "m-1")
        await store.record_post(SID, "m-1/0", "r1")
        assert await store.cursor(SID) == "m-1"
        await store.mark_ended(SID)  # an ended session's cursor and posts go with it
        assert await store.cursor(SID) is None and await store.recorded(SID, "m-1/0") is None
    finally:
        await store.close()


async def test_an_interim_message_from_before_a_restart_is_reused_and_deleted(store):
    from rawp.clock import FakeClock
    from tests.gateway.support import ManualSleep, eventually, settle

    clock = FakeClock()
    sleep = ManualSleep(clock)
    start = frame("session.turn.start", {"turn_id": "turn-1", "prompt_message_id": "p-1"})
    before = RecordingPlatform()
    renderer = SessionRenderer(
        before, THREAD, SID, send_frame=_nowhere, store=store, clock=clock, sleep=sleep
    )
    await renderer.feed(start)
    await settle()  # the heartbeat is asleep: time can pass
    await sleep.advance(32)  # the interim status message goes out (G-NS-11)
    await eventually(lambda: before.of("send"), "the interim status message")
    [(_, text, interim)] = before.of("send")
    assert text.startswith("⏳")
    # The id is recorded just after the post returns (gateway.rendering.posting, rule 1); the
    # gateway dies after that. (Dying between the two is rule 3's case: found by its key.)
    await eventually(
        lambda: store.recorded(SID, "interim/turn-1/0"), "the interim message's id recorded"
    )
    # The gateway dies; the one after it is replayed the turn's end only.
    after = RecordingPlatform()
    await render(
        store, after, [frame("session.turn.end", {"turn_id": "turn-1", "stop_reason": "end_turn"})]
    )
    assert after.of("send") == [] and after.of("delete") == [("delete", interim)]
    await renderer.close()


async def test_shown_thinking_rendered_again_is_not_posted_again(store):
    frames = [
        frame("session.turn.start", {"turn_id": "turn-1", "prompt_message_id": "p-1"}),
        frame("agent.thinking.delta", {"content_index": 0, "text": "Hmm."}),
        frame("agent.thinking.done", {"content_index": 0}),
    ]
    posted = []
    for _ in range(2):  # the second time: a restarted gateway replayed the same frames
        platform = RecordingPlatform()
        renderer = SessionRenderer(
            platform, THREAD, SID, send_frame=_nowhere, store=store,
            options=RenderOptions(show_thinking=True),
        )  # fmt: skip
        for each in frames:
            await renderer.feed(each)
        await renderer.close()
        posted.append(platform.of("hidden"))
    assert posted == [[("hidden", "💭 Thinking", "Hmm.")], []]


async def test_the_prompt_of_a_turn_begun_before_a_restart_still_gets_its_check_mark(store):
    frames = answer_frames()
    first = RecordingPlatform()
    # A turn long enough for ⏳ (gateway.rendering.working_mark): here ⏳ is due at once.
    renderer = SessionRenderer(
        first, THREAD, SID, send_frame=_nowhere, store=store,
        options=RenderOptions(working_after_s=0.0),
    )  # fmt: skip
    renderer.expect_prompt("p-1", MessageRef(THREAD, "user-msg"), "alice")
    for each in frames[:4]:  # the turn started, its first block was posted; then it died
        await renderer.feed(each)
    await settle()
    assert first.of("react") == [("react", "user-msg", "⏳")]

    after = RecordingPlatform()  # replayed from the cursor: the turn's start is not among them
    await render(store, after, frames[4:])
    assert after.of("unreact") == [("unreact", "user-msg", "⏳")]
    assert after.of("react")[-1] == ("react", "user-msg", "✅")
    await renderer.close()
