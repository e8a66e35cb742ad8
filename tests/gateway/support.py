"""Test support for the gateway: a sleep driven by a FakeClock, and frame builders."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

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
    """Wait for something a real thread does (the console's input reader); bounded, not timed."""
    for _ in range(1000):
        if predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{what} never happened")
