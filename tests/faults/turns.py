"""One trial's turn: prompt the counter agent, strike at a chosen frame, follow the turn to its
end across reconnects, and count what arrived (tests.faults.trials.count_turn)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from tests.faults.agent import LINES, expected, prompt_text
from tests.faults.edge import RecordingEdge
from tests.faults.trials import Outcome, count_turn

TURN_FRAMES = LINES + 2  # session.turn.start, the lines, session.turn.end


async def turn_trial(
    edge: RecordingEdge,
    number: int,
    urls: Callable[[], list[str]],
    strike_at: int | None,
    strike: Callable[[], Awaitable[None]] | None,
    point: str | None = None,
    limit: float = 15.0,
) -> Outcome:
    """Runs trial `number`'s turn; `strike()` runs once the edge has received `strike_at`
    frames of the turn (0: right after the prompt is sent), while the edge reads nothing."""
    tag = f"t{number}"
    if edge.ws is None:
        await edge.connect(urls, limit)
    first = len(edge.logs) - 1
    marks = [len(edge.logs[first].frames)]
    message_id = await edge.prompt(prompt_text(tag))
    if strike is not None and strike_at == 0:
        await strike()
    seen, turn_id = 0, None

    async def on_frame(received: dict) -> None:
        nonlocal seen, turn_id
        start = received["type"] == "session.turn.start"
        if start and received["payload"].get("prompt_message_id") == message_id:
            turn_id = received.get("turn_id")
        text = received.get("payload", {}).get("text", "")
        if received["type"] == "agent.text.delta" and text.startswith(f"{tag} "):
            turn_id = turn_id or received.get("turn_id")
        if turn_id is None or received.get("turn_id") != turn_id:
            return
        seen += 1
        if strike is not None and seen == strike_at:
            await strike()

    def done(received: dict) -> bool:
        return received["type"] == "session.turn.end" and received.get("turn_id") == turn_id

    outcome = Outcome(number, point or f"after frame {strike_at} of {TURN_FRAMES}")
    try:
        await edge.follow(done, urls, limit, on_frame)
    except TimeoutError as exc:
        outcome.notes.append(f"no session.turn.end within {limit}s {exc}".rstrip())
    marks += [0] * (len(edge.logs) - 1 - first)
    outcome.sockets = len(edge.logs) - first
    return count_turn(outcome, edge.logs[first:], marks, tag, expected(tag))
