"""Test support for the gateway: a sleep driven by a FakeClock, and frame builders."""

from __future__ import annotations

import asyncio
import inspect
import json
from pathlib import Path
from typing import Any

from gateway.platform import (
    ChatPlatform,
    Choice,
    ConversationRef,
    MessageRef,
    PlatformLimits,
)
from rawp.clock import FakeClock
from rawp.frames import Frame, make_frame, parse_frame

FIXTURES = Path(__file__).parent / "fixtures"


class ManualSleep:
    """An injectable `sleep` that returns only when the test moves the clock past it."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.requests: list[float] = []
        self._sleepers: list[tuple[float, asyncio.Future[None]]] = []

    async def __call__(self, seconds: float) -> None:
        self.requests.append(seconds)
        future = asyncio.get_running_loop().create_future()
        self._sleepers.append((self.clock.monotonic() + seconds, future))
        try:
            await future
        finally:
            self._sleepers = [(d, f) for d, f in self._sleepers if f is not future]

    async def advance(self, seconds: float) -> None:
        """Move time forward, waking each sleeper at its own deadline, in order."""
        target = self.clock.monotonic() + seconds
        await settle()
        while True:
            due = [(d, f) for d, f in self._sleepers if d <= target and not f.done()]
            if not due:
                break
            deadline, future = min(due, key=lambda item: item[0])
            self.clock.advance(max(0.0, deadline - self.clock.monotonic()))
            future.set_result(None)
            await settle()
        self.clock.advance(max(0.0, target - self.clock.monotonic()))
        await settle()


async def settle(rounds: int = 20) -> None:
    """Let every ready task run until it blocks again."""
    for _ in range(rounds):
        await asyncio.sleep(0)


def load_fixture(name: str) -> list[Frame]:
    """A recorded DPS frame sequence: one JSON frame per line (tests/gateway/fixtures)."""
    lines = (FIXTURES / name).read_text().splitlines()
    return [parse_frame(line) for line in lines if line.strip()]


def frame(type: str, payload: dict[str, Any], turn_id: str | None = "turn-1", **kw: Any) -> Frame:
    return make_frame(type, payload, session_id="sess-1", turn_id=turn_id, **kw)


def dump_fixture(frames: list[Frame]) -> str:
    return "\n".join(json.dumps(f.to_dict(), ensure_ascii=False) for f in frames) + "\n"


class Recorder:
    """The frames a renderer sends back to the master (interaction responses)."""

    def __init__(self) -> None:
        self.frames: asyncio.Queue[Frame] = asyncio.Queue()

    async def __call__(self, frame: Frame) -> None:
        await self.frames.put(frame)

    async def next(self) -> Frame:
        # A bound, not a timing assertion: it only turns a hang into a failure.
        return await asyncio.wait_for(self.frames.get(), 10)


async def eventually(predicate, what: str = "condition") -> None:
    """Wait for something a real thread or task does (the console's input reader, a store
    write after a post); bounded, not timed. `predicate` may return an awaitable."""
    for _ in range(1000):
        result = predicate()
        if inspect.isawaitable(result):
            result = await result
        if result:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{what} never happened")


class RecordingPlatform(ChatPlatform):
    """A ChatPlatform that records every call: a fake at the platform seam, like a fake server.

    Answers to interaction prompts are queued by the test with `answer()`; `None` stands for a
    timeout. `fail` names operations that raise, to show decorations are best effort.
    """

    name = "recording"

    def __init__(self, limits: PlatformLimits | None = None, fail: frozenset[str] = frozenset()):
        self.limits = limits or PlatformLimits(max_message_length=2000, typing_expiry_s=10.0)
        self.calls: list[tuple] = []
        self.fail = fail
        self._choices: asyncio.Queue[Choice | None] = asyncio.Queue()
        self._count = 0

    def _record(self, *call) -> None:
        self.calls.append(call)
        if call[0] in self.fail:
            raise OSError(f"{call[0]} failed")

    def _ref(self, conversation: ConversationRef) -> MessageRef:
        self._count += 1
        return MessageRef(conversation, f"r{self._count}")

    def of(self, kind: str) -> list[tuple]:
        return [c for c in self.calls if c[0] == kind]

    def answer(self, choice: Choice | None) -> None:
        self._choices.put_nowait(choice)

    async def send_message(self, conversation, text):
        ref = self._ref(conversation)
        self._record("send", text, ref.message_id)
        return ref

    async def edit_message(self, message, text):
        self._record("edit", message.message_id, text)

    async def delete_message(self, message):
        self._record("delete", message.message_id)

    async def send_hidden(self, conversation, title, text):
        self._record("hidden", title, text)

    async def send_ephemeral(self, conversation, user_id, text):
        self._record("ephemeral", user_id, text)

    async def add_reaction(self, message, emoji):
        self._record("react", message.message_id, emoji)

    async def remove_reaction(self, message, emoji):
        self._record("unreact", message.message_id, emoji)

    async def trigger_typing(self, conversation):
        self._record("typing")

    async def set_status(self, conversation, text):
        self._record("status", text)

    async def send_interaction(self, conversation, prompt):
        ref = self._ref(conversation)
        self._record("interaction", prompt, ref.message_id)
        return ref

    async def wait_for_choice(self, message, timeout_s):
        self._record("wait", message.message_id, timeout_s)
        return await self._choices.get()

    async def close_interaction(self, message, outcome):
        self._record("close", message.message_id, outcome)
