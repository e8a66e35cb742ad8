"""The coalesced status line (gateway.rendering.status_line): its rules on a fake clock."""

from __future__ import annotations

import asyncio

import pytest

from gateway.platform import ConversationRef, MessageRef
from gateway.rendering.status_line import ProgressEdits, StatusLine
from rawp.clock import FakeClock
from runtime.tasks import TaskOwner
from tests.gateway.support import ManualSleep, settle


class Line:
    def __init__(self, owner: TaskOwner, every_s: float = 2.0) -> None:
        self.clock = FakeClock()
        self.sleep = ManualSleep(self.clock)
        self.sent: list[str | None] = []
        self.gate: asyncio.Event | None = None  # set by a test: sends wait on it
        self.line = StatusLine(self._send, owner, every_s, clock=self.clock, sleep=self.sleep)

    async def _send(self, text: str | None) -> None:
        if self.gate is not None:
            await self.gate.wait()
        self.sent.append(text)


@pytest.fixture
async def owner():
    async with TaskOwner("status line") as tasks:
        yield tasks
    assert len(tasks) == 0


async def test_nothing_before_a_turn_and_nothing_after_its_clear(owner):
    s = Line(owner)
    await s.line.want("💭 Thinking…")  # no turn yet
    await s.line.start()
    await s.line.clear()
    await s.line.want("🔧 Using tools…")  # after the clear: the turn is over
    await s.line.clear()  # once per turn
    await s.sleep.advance(10)
    assert s.sent == [None]


async def test_changes_after_the_interval_go_out_at_once_and_equal_text_is_not_resent(owner):
    s = Line(owner)
    await s.line.start()
    await s.sleep.advance(5)
    await s.line.want("a")
    assert s.sent == ["a"]
    await s.sleep.advance(5)
    await s.line.want("a")
    await s.sleep.advance(5)
    assert s.sent == ["a"]
    await s.line.want("b")
    assert s.sent == ["a", "b"]


async def test_a_held_send_in_flight_lands_before_the_clear(owner):
    s = Line(owner)
    await s.line.start()
    await s.line.want("a")  # held until 2 s
    s.gate = asyncio.Event()
    await s.sleep.advance(2)  # the held send starts and waits on the platform
    clearing = asyncio.create_task(s.line.clear())
    await settle()
    assert s.sent == []  # the clear waits for the send in flight
    s.gate.set()
    await clearing
    assert s.sent == ["a", None]


async def test_a_change_during_a_held_send_is_sent_after_it(owner):
    s = Line(owner)
    await s.line.start()
    await s.line.want("a")
    s.gate = asyncio.Event()
    await s.sleep.advance(2)
    await s.line.want("b")  # while "a" is in flight: held for the next interval
    s.gate.set()
    await settle()
    assert s.sent == ["a"]
    await s.sleep.advance(2)
    assert s.sent == ["a", "b"]
    await s.line.clear()


# --- the progress message's edits (rules 12–14) ----------------------------------------------

PROGRESS = MessageRef(ConversationRef("recording", "chan", "thread"), "progress-1")


class Edits:
    def __init__(self, owner: TaskOwner, every_s: float = 2.0) -> None:
        self.clock = FakeClock()
        self.sleep = ManualSleep(self.clock)
        self.sent: list[tuple[str, str]] = []
        self.edits = ProgressEdits(self._edit, owner, every_s, clock=self.clock, sleep=self.sleep)

    async def _edit(self, message: MessageRef, text: str) -> None:
        self.sent.append((message.message_id, text))


async def test_progress_edits_are_held_after_the_post_and_the_latest_goes_out(owner):
    e = Edits(owner)
    e.edits.posted(PROGRESS, "tasks")
    await e.edits.want(PROGRESS, "tasks + Read")
    await e.edits.want(PROGRESS, "tasks + Bash")
    assert e.sent == []  # rule 12: the post was the first send
    await e.sleep.advance(2)
    await settle()
    assert e.sent == [("progress-1", "tasks + Bash")]  # the ones between are dropped
    await e.sleep.advance(5)
    await e.edits.want(PROGRESS, "tasks done")  # the interval has passed: at once
    assert e.sent[-1] == ("progress-1", "tasks done")
    await e.edits.want(PROGRESS, "tasks done")
    await e.sleep.advance(5)
    assert len(e.sent) == 2  # equal text is not sent again


async def test_the_final_progress_edit_goes_now_and_drops_a_held_one(owner):
    e = Edits(owner)
    e.edits.posted(PROGRESS, "tasks")
    await e.edits.want(PROGRESS, "tasks + Bash")  # held
    await e.edits.now(PROGRESS, "tasks final")  # rule 13: no wait
    assert e.sent == [("progress-1", "tasks final")]
    await e.sleep.advance(10)
    await settle()
    assert e.sent == [("progress-1", "tasks final")]  # the held one never lands after it
    await e.edits.now(PROGRESS, "tasks final")
    assert len(e.sent) == 1  # the message already reads it


async def test_a_final_progress_edit_equal_to_the_post_is_not_sent(owner):
    e = Edits(owner)
    e.edits.posted(PROGRESS, "tasks")
    await e.edits.now(PROGRESS, "tasks")
    assert e.sent == []
