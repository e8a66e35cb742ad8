"""One trial's turn: prompt the counter agent, strike at a chosen frame, follow the turn to its
end across reconnects, and count what arrived (tests.faults.trials.count_turn)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

from tests.faults.agent import LINES, expected, prompt_text, wait_for_file
from tests.faults.edge import RecordingEdge
from tests.faults.trials import Outcome, count_turn

TURN_FRAMES = LINES + 2  # session.turn.start, the lines, session.turn.end


class TurnWatch:
    """What one edge receives of trial `number`'s turn, from the moment the watch is made
    (before the prompt is sent) to the turn's `session.turn.end`."""

    def __init__(self, edge: RecordingEdge, number: int) -> None:
        assert edge.ws is not None, "a watch starts on a connected edge"
        self.edge = edge
        self.tag = f"t{number}"
        self.first = len(edge.logs) - 1
        self.mark = len(edge.logs[self.first].frames)
        self.message_id: str | None = None
        self.turn_id: str | None = None
        self.seen = 0  # frames of the turn received so far
        self.problems: list[str] = []
        self.struck_socket: object = None  # the socket that was open when the strike ran

    def _of_turn(self, received: dict) -> bool:
        payload = received.get("payload", {})
        if received["type"] == "session.turn.start" and (
            payload.get("prompt_message_id") == self.message_id
        ):
            self.turn_id = received.get("turn_id")
        text = payload.get("text", "")
        if received["type"] == "agent.text.delta" and text.startswith(f"{self.tag} "):
            self.turn_id = self.turn_id or received.get("turn_id")
        return self.turn_id is not None and received.get("turn_id") == self.turn_id

    async def follow(
        self,
        urls: Callable[[], list[str]],
        limit: float,
        strike_at: int | None = None,
        strike: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """Until the turn's end; `strike()` runs when `strike_at` frames of the turn have come
        (the edge reads nothing meanwhile). A turn that does not end in time is a problem
        noted, not an exception: the trial is still counted."""

        async def on_frame(received: dict) -> None:
            if not self._of_turn(received):
                return
            self.seen += 1
            if strike is not None and self.seen == strike_at:
                self.struck_socket = self.edge.ws
                await strike()

        def done(received: dict) -> bool:
            return (
                received["type"] == "session.turn.end"
                and self.turn_id is not None
                and received.get("turn_id") == self.turn_id
            )

        try:
            await self.edge.follow(done, urls, limit, on_frame)
        except TimeoutError as exc:
            self.problems.append(f"no session.turn.end within {limit}s {exc}".rstrip())
        # The rest of the turn may have reached the edge before the strike landed (read from
        # the socket's buffer afterwards), so the turn can end on a socket whose master was
        # then killed. The next trial's prompt must not go into it: that prompt would be lost
        # (or refused as closed) before the trial begins — scenario 6's business, not this one.
        if self.struck_socket is not None and self.edge.ws is self.struck_socket:
            self.edge.retire()

    def count(self, outcome: Outcome) -> Outcome:
        logs = self.edge.logs[self.first :]
        outcome.sockets = len(logs)
        outcome.notes += self.problems
        marks = [self.mark] + [0] * (len(logs) - 1)
        return count_turn(outcome, logs, marks, self.tag, expected(self.tag), self.turn_id)


async def strike_when_started(
    tag: str, markers: Path | None, strike: Callable[[], Awaitable[None]]
) -> None:
    """A strike "at frame 0": once the client has handed the prompt to the agent, so the
    prompt itself is not what the fault loses (that is scenario 6's business)."""
    if markers is not None:
        await asyncio.to_thread(wait_for_file, markers / f"{tag}.started")
    await strike()


async def turn_trial(
    edge: RecordingEdge,
    number: int,
    urls: Callable[[], list[str]],
    strike_at: int | None,
    strike: Callable[[], Awaitable[None]] | None,
    markers: Path | None = None,
    point: str | None = None,
    limit: float = 15.0,
) -> Outcome:
    """Trial `number`'s turn, prompted and followed by `edge`; `strike()` runs once the edge
    has received `strike_at` frames of the turn (0: once the agent has started, per its marker
    in `markers`, before any frame of the turn can have reached the edge)."""
    if edge.ws is None:
        await edge.connect(urls, limit)
    watch = TurnWatch(edge, number)
    watch.message_id = await edge.prompt(prompt_text(watch.tag))
    if strike is not None and strike_at == 0:
        watch.struck_socket = edge.ws
        await strike_when_started(watch.tag, markers, strike)
    await watch.follow(urls, limit, strike_at, strike)
    return watch.count(Outcome(number, point or f"after frame {strike_at} of {TURN_FRAMES}"))
