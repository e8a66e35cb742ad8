"""Busy is visible (gateway.sessions.busy): the queue's bookkeeping, its marks through a renderer at
the platform seam, and the per-channel busy mode in the store."""

from __future__ import annotations

import aiosqlite
from hypothesis import given
from hypothesis import strategies as st

from gateway.platform import ConversationRef, MessageRef, PlatformLimits
from gateway.rendering.render import RenderOptions, SessionRenderer
from gateway.rendering.turn import FAILED, WORKING
from gateway.sessions.busy import (
    INTERRUPT,
    LINE_KEY,
    QUEUE,
    QUEUED,
    PromptQueue,
    busy_mode,
    queue_line,
    set_busy_mode,
)
from gateway.sessions.prompt import text_prompt
from gateway.sessions.session import ChatSession
from gateway.storage.conversation_store import ConversationStore
from rawp.frames import Frame
from tests.gateway.support import RecordingPlatform, frame, settle

CONV = ConversationRef("recording", "chan", "thread")


def msg(name: str) -> MessageRef:
    return MessageRef(CONV, name)


# --- the bookkeeping --------------------------------------------------------------------------


def test_a_prompt_to_an_idle_session_is_not_queued_and_one_behind_a_turn_is():
    queue = PromptQueue()
    assert queue.sent("p1", msg("m1"), turn_running=False) is False
    assert queue.sent("p2", msg("m2"), turn_running=False) is True  # p1 has not started yet
    assert [w.prompt_id for w in queue.started("p1")] == ["p1"]
    assert queue.sent("p3", msg("m3"), turn_running=True) is True
    assert queue.get("p2").queued and queue.get("p3").queued


def test_a_start_takes_the_prompts_before_it_along_and_a_refusal_only_itself():
    queue = PromptQueue()
    for n in range(1, 5):
        queue.sent(f"p{n}", None, turn_running=True)
        queue.get(f"p{n}").marked = True
    assert queue.waiting == 4
    assert [w.prompt_id for w in queue.refused("p3")] == ["p3"]
    # p1's start frame was lost in a gap: p2 starting means p1 ran already.
    assert [w.prompt_id for w in queue.started("p2")] == ["p1", "p2"]
    assert queue.waiting == 1
    assert queue.started("elsewhere") == []  # a prompt of another edge changes nothing
    assert queue.waiting == 1
    assert [w.prompt_id for w in queue.clear()] == ["p4"] and queue.waiting == 0


@given(st.lists(st.sampled_from(["send", "start", "refuse"]), max_size=40))
def test_the_count_is_what_was_queued_and_has_not_left(steps):
    """Against a model: prompts start in the order sent (the client's queue)."""
    queue, model, sent, running = PromptQueue(), [], 0, False
    for step in steps:
        if step == "send":
            sent += 1
            queued = queue.sent(f"p{sent}", None, turn_running=running)
            assert queued == (running or bool(model))
            queue.get(f"p{sent}").marked = True
            model.append((f"p{sent}", queued))
        elif step == "start" and model:
            prompt_id, _ = model.pop(0)
            assert [w.prompt_id for w in queue.started(prompt_id)] == [prompt_id]
            running = True
        elif step == "refuse" and model:
            prompt_id, _ = model.pop()
            assert len(queue.refused(prompt_id)) == 1
        assert queue.waiting == sum(1 for _, queued in model if queued)


def test_the_line_counts():
    assert queue_line(1) == "🕒 queued (1) — runs when the current turn ends."
    assert "queued (3)" in queue_line(3)


# --- the marks, through a renderer ------------------------------------------------------------


class Link:
    """The session's frames out, recorded (the client's side is played by the test)."""

    def __init__(self) -> None:
        self.sent: list[Frame] = []

    async def send(self, frame: Frame) -> None:
        self.sent.append(frame)

    async def receive(self) -> Frame | None:
        return None


class Session:
    def __init__(
        self, platform: RecordingPlatform | None = None, store: ConversationStore | None = None
    ) -> None:
        self.platform = platform or RecordingPlatform()
        self.link = Link()
        # ⏳ is due at once here (it waits `working_after_s` in a session:
        # gateway.rendering.working_mark), so the order of 🕒 and ⏳ is seen turn by turn.
        self.renderer = SessionRenderer(
            self.platform, CONV, "sess-1", send_frame=self.link.send, store=store,
            options=RenderOptions(working_after_s=0.0),
        )  # fmt: skip
        self.chat = ChatSession(self.renderer, self.link)

    async def prompt(self, name: str) -> str:
        await self.chat.send_prompt(text_prompt(name), message=msg(name), user_id="alice")
        return self.link.sent[-1].message_id

    async def start(self, prompt_id: str, turn: str) -> None:
        payload = {"turn_id": turn, "prompt_message_id": prompt_id}
        await self.renderer.feed(frame("session.turn.start", payload, turn))
        await settle()

    async def end(self, turn: str) -> None:
        payload = {"turn_id": turn, "stop_reason": "end_turn"}
        await self.renderer.feed(frame("session.turn.end", payload, turn))

    def marks(self) -> list[tuple]:
        """Every 🕒 and ⏳ call and every call on the queue line, in order."""
        return [
            c
            for c in self.platform.calls
            if (c[0] in ("react", "unreact") and c[2] in (QUEUED, WORKING, FAILED))
            or (c[0] in ("send", "edit") and any("queued (" in str(part) for part in c))
            or c[0] == "delete"
        ]


async def test_queued_prompts_are_marked_until_their_turn_starts():
    s = Session()
    p1 = await s.prompt("m1")
    await s.start(p1, "t1")
    p2 = await s.prompt("m2")
    p3 = await s.prompt("m3")
    line = s.platform.of("send")[0][2]
    assert s.marks() == [
        ("react", "m1", WORKING),
        ("react", "m2", QUEUED),
        ("send", queue_line(1), line),
        ("react", "m3", QUEUED),
        ("edit", line, queue_line(2)),
    ]
    del s.platform.calls[:]
    await s.end("t1")
    await s.start(p2, "t2")
    assert s.marks() == [
        ("unreact", "m1", WORKING),  # the turn before ended
        ("unreact", "m2", QUEUED),  # 🕒 comes off before ⏳ goes on
        ("edit", line, queue_line(1)),
        ("react", "m2", WORKING),
    ]
    del s.platform.calls[:]
    await s.end("t2")
    await s.start(p3, "t3")
    assert s.marks() == [
        ("unreact", "m2", WORKING),
        ("unreact", "m3", QUEUED),
        ("delete", line),
        ("react", "m3", WORKING),
    ]


async def test_a_refused_prompt_leaves_the_queue_and_an_idle_one_is_never_marked():
    s = Session()
    p1 = await s.prompt("m1")
    p2 = await s.prompt("m2")  # p1 has not started yet: p2 waits behind it
    refusal = {"code": "TURN_QUEUE_FULL", "message": "wait", "ref_message_id": p2}
    await s.renderer.feed(frame("session.error", refusal, None))
    assert [c for c in s.marks() if c[1] == "m2" or c[0] != "react"][-3:] == [
        ("unreact", "m2", QUEUED),
        ("delete", s.platform.of("send")[0][2]),
        ("react", "m2", FAILED),
    ]
    await s.start(p1, "t1")
    await s.end("t1")
    del s.platform.calls[:]
    p3 = await s.prompt("m3")  # idle session: runs at once
    await s.start(p3, "t3")
    assert s.marks() == [("react", "m3", WORKING)]


async def test_clearing_takes_every_mark_off():
    s = Session()
    await s.start(await s.prompt("m1"), "t1")
    await s.prompt("m2")
    await s.prompt("m3")
    del s.platform.calls[:]
    await s.renderer.queue.clear()
    line = s.platform.of("delete")[0][1]
    assert s.marks() == [("unreact", "m2", QUEUED), ("unreact", "m3", QUEUED), ("delete", line)]


async def test_without_reactions_or_edits_the_line_alone_shows_the_queue():
    limits = PlatformLimits(max_message_length=2000, supports_reactions=False, supports_edit=False)
    s = Session(RecordingPlatform(limits))
    await s.start(await s.prompt("m1"), "t1")
    await s.prompt("m2")
    await s.prompt("m3")
    sends = s.platform.of("send")
    assert [c[1] for c in sends] == [queue_line(1), queue_line(2)]
    assert s.platform.of("delete") == [("delete", sends[0][2])]  # replaced, not edited
    assert not s.platform.of("react")


async def test_a_failing_reaction_never_stops_the_prompt():
    s = Session(RecordingPlatform(fail=frozenset({"react", "send"})))
    await s.start(await s.prompt("m1"), "t1")
    await s.prompt("m2")
    assert [f.type for f in s.link.sent] == ["control.prompt.request"] * 2


async def test_a_turn_starting_in_front_of_an_interrupting_prompt_is_cancelled_at_once():
    s = Session()
    p1 = await s.prompt("m1")  # not started yet when the next one goes out
    s.renderer.queue.interrupt_next = True  # what busy.send_prompt sets in `interrupt` mode
    p2 = await s.prompt("m2")
    await s.start(p1, "t1")
    cancel = s.link.sent[-1]
    assert (cancel.type, cancel.payload.turn_id) == ("control.prompt.cancel", "t1")
    await s.end("t1")
    await s.start(p2, "t2")  # nothing waits behind it: it runs
    assert s.link.sent[-1] is cancel
    # The flag is the next prompt's only: a later one queues as before.
    await s.prompt("m3")
    assert not s.renderer.queue.queue.get(s.link.sent[-1].message_id).interrupts


async def test_an_interrupt_that_lost_the_race_with_the_turns_end_is_not_shown():
    s = Session()
    await s.start(await s.prompt("m1"), "t1")
    ours = s.renderer.queue.cancel_frame("t1")  # what busy.send_prompt sends
    await s.end("t1")
    lost = {"code": "NO_SUCH_TURN", "message": "no running turn", "ref_message_id": ours.message_id}
    await s.renderer.feed(frame("session.error", lost, None))
    assert not [c for c in s.platform.of("send") if "NO_SUCH_TURN" in c[1]]
    # A stop the user asked for by hand is still answered.
    by_hand = {**lost, "ref_message_id": "someone-elses-cancel"}
    await s.renderer.feed(frame("session.error", by_hand, None))
    assert [c for c in s.platform.of("send") if "NO_SUCH_TURN" in c[1]]


async def test_in_queue_mode_nothing_is_cancelled():
    s = Session()
    p1 = await s.prompt("m1")
    await s.prompt("m2")
    await s.start(p1, "t1")
    assert [f.type for f in s.link.sent] == ["control.prompt.request"] * 2


async def test_the_marks_outlive_a_gateway_restart(tmp_path):
    """Rule 6: a renderer made anew on the same store still unmarks, counts down and reacts."""
    store = await ConversationStore.open(tmp_path / "conversations.sqlite3")
    try:
        before = Session(store=store)
        p1 = await before.prompt("m1")
        await before.start(p1, "t1")
        p2, p3 = await before.prompt("m2"), await before.prompt("m3")
        line = before.platform.of("send")[0][2]
        await before.renderer.close()

        after = Session(RecordingPlatform(), store=store)  # the restarted gateway
        await after.end("t1")  # joined midway: its ⏳/✅ come from the stored turn origin
        del after.platform.calls[:]
        await after.start(p2, "t2")
        assert after.marks() == [
            ("unreact", "m2", QUEUED),
            ("edit", line, queue_line(1)),
            ("react", "m2", WORKING),  # the turn knows its message again
        ]
        await after.end("t2")
        assert ("react", "m2", "✅") in after.platform.calls
        await after.start(p3, "t3")
        assert ("delete", line) in after.platform.calls
        assert await store.queued("sess-1") == []
        assert await store.recorded("sess-1", LINE_KEY) is None
    finally:
        await store.close()


# --- the busy mode ----------------------------------------------------------------------------


async def test_the_busy_mode_survives_reopening_the_store(tmp_path):
    path = tmp_path / "conversations.sqlite3"
    store = await ConversationStore.open(path)
    thread = ConversationRef("discord", "chan-1", "thread-1")
    assert await busy_mode(store, thread) == QUEUE  # the default
    answer = await set_busy_mode(store, thread, " Interrupt ")
    assert answer.startswith("Busy mode in this channel is now `interrupt`")
    assert (await set_busy_mode(store, thread, "later")).startswith("❌")
    await store.close()

    again = await ConversationStore.open(path)
    try:
        # Every thread under the channel, and the channel itself, share it; others do not.
        assert await busy_mode(again, ConversationRef("discord", "chan-1", "other")) == INTERRUPT
        assert await busy_mode(again, ConversationRef("discord", "chan-1")) == INTERRUPT
        assert await busy_mode(again, ConversationRef("slack", "chan-1")) == QUEUE
        assert "`interrupt`" in await set_busy_mode(again, thread, None)
        await set_busy_mode(again, thread, "queue")
        assert await busy_mode(again, thread) == QUEUE
    finally:
        await again.close()


async def test_a_store_file_from_before_the_setting_gets_its_table(tmp_path):
    path = tmp_path / "old.sqlite3"
    async with aiosqlite.connect(path) as db:  # what an older gateway left behind
        await db.execute(
            "CREATE TABLE conversations (conversation_key TEXT PRIMARY KEY, platform TEXT NOT"
            " NULL, channel_id TEXT NOT NULL, thread_id TEXT, subject TEXT NOT NULL, session_id"
            " TEXT NOT NULL, node_id TEXT NOT NULL, agent_name TEXT NOT NULL, created_at TEXT"
            " NOT NULL, ended INTEGER NOT NULL DEFAULT 0)"
        )
        await db.commit()
    store = await ConversationStore.open(path)
    try:
        await store.set_busy_mode("slack", "C1", INTERRUPT)
        assert await store.busy_mode("slack", "C1") == INTERRUPT
    finally:
        await store.close()
