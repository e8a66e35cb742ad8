"""Counted trials: how many, which seed, and what one turn's frames say about loss and repeats.

A scenario runs `trials()` trials on one stack (RAWP_FAULT_TRIALS, default 20), each with its
own fault point drawn from a seeded generator (RAWP_FAULT_SEED, or a fresh seed that is
printed), records one `Outcome` per trial, and fails at the end with every bad trial named —
trial number, fault point, counts. A scenario whose trials keep failing stops after
RAWP_FAULT_MAX_FAILURES (default 3) failed trials, saying how many it did not run: a broken
product fails fast instead of spending minutes on timeouts that would all say the same.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from tests.faults.edge import SocketLog


def trials() -> int:
    return int(os.environ.get("RAWP_FAULT_TRIALS", "20"))


def max_failures() -> int:
    return int(os.environ.get("RAWP_FAULT_MAX_FAILURES", "3"))


def seeded(scenario: str) -> tuple[random.Random, int]:
    seed = int(os.environ.get("RAWP_FAULT_SEED") or random.SystemRandom().randrange(10**9))
    print(f"\n{scenario}: RAWP_FAULT_SEED={seed}")
    return random.Random(f"{seed}:{scenario}"), seed


@dataclass
class Outcome:
    trial: int
    point: str  # where the fault struck, e.g. "after frame 17 of 62"
    lost: int = 0
    repeated_on_socket: int = 0  # a message_id received twice on one socket
    repeated_types: list[str] = field(default_factory=list)  # the types of those frames
    repeated_content: int = 0  # a line received under two message_ids (no edge can drop it)
    across_sockets: int = 0  # a message_id received again on a later socket (edge may drop)
    out_of_order: bool = False
    dropped_reported: int = 0  # what `session.history` frames said could not be replayed
    sockets: int = 1
    error: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return (
            self.error is None
            and not self.lost
            and not self.repeated_on_socket
            and not self.repeated_content
            and not self.out_of_order
            and not self.notes
        )

    def line(self) -> str:
        state = "ok" if self.ok else "FAILED"
        text = (
            f"trial {self.trial} {state} ({self.point}): lost {self.lost}, repeated on one "
            f"socket {self.repeated_on_socket}, same line under two ids {self.repeated_content}, "
            f"again on a later socket {self.across_sockets}, order "
            f"{'BROKEN' if self.out_of_order else 'kept'}, sockets {self.sockets}, "
            f"history said dropped {self.dropped_reported}"
        )
        if self.repeated_types:
            text += f"; repeated: {', '.join(sorted(set(self.repeated_types)))}"
        for note in self.notes:
            text += f"; {note}"
        if self.error:
            text += f"; error: {self.error}"
        return text


def count_turn(
    outcome: Outcome,
    logs: list[SocketLog],
    marks: list[int],
    tag: str,
    expected: list[str],
    turn_id: str | None = None,
) -> Outcome:
    """Fills `outcome` from what the edge received during one turn: `logs` are the sockets
    the turn touched, `marks[i]` the index in `logs[i].frames` where the turn began on it (a
    socket lives across trials). A frame of the turn is one whose `turn_id` is the turn's:
    `turn_id` (from its `session.turn.start`) or that of a line of the turn."""
    turn_ids = {turn_id} | {
        f.get("turn_id")
        for log in logs
        for f in log.frames
        if f["type"] == "agent.text.delta" and f["payload"]["text"].startswith(f"{tag} ")
    }
    turn_ids.discard(None)
    if len(turn_ids) > 1:
        outcome.notes.append(f"the lines came in {len(turn_ids)} turns")
    repeats_on_sockets(outcome, logs, marks)
    seen_ids: set[str] = set()
    first_seen: list[dict] = []  # the turn's frames, each once, in order of first arrival
    for log, mark in zip(logs, marks, strict=True):
        for f in log.frames[mark:]:
            if f.get("turn_id") not in turn_ids:
                continue
            if f["message_id"] in seen_ids:
                outcome.across_sockets += 1
                continue
            seen_ids.add(f["message_id"])
            first_seen.append(f)
    lines = [f["payload"]["text"] for f in first_seen if f["type"] == "agent.text.delta"]
    outcome.lost = len(set(expected) - set(lines))
    outcome.dropped_reported = sum(
        f["payload"].get("dropped", 0)
        for log, mark in zip(logs, marks, strict=True)
        for f in log.frames[mark:]
        if f["type"] == "session.history"
    )
    outcome.repeated_content = len(lines) - len(set(lines))
    outcome.out_of_order = [line for line in lines if line in expected] != sorted(
        set(lines) & set(expected), key=expected.index
    )
    for kind in ("session.turn.start", "session.turn.end"):
        got = sum(1 for f in first_seen if f["type"] == kind)
        if got != 1:
            outcome.notes.append(f"{kind} received {got} times")
    return outcome


def repeats_on_sockets(outcome: Outcome, logs: list[SocketLog], marks: list[int]) -> None:
    """Counts, into `outcome`, the frames received since `marks[i]` on `logs[i]` whose
    message_id that same socket had received before (at any time in its life)."""
    for log, mark in zip(logs, marks, strict=True):
        on_socket: set[str] = set()
        for index, f in enumerate(log.frames):
            if f["message_id"] in on_socket and index >= mark:
                outcome.repeated_on_socket += 1
                outcome.repeated_types.append(f["type"])
            on_socket.add(f["message_id"])


async def run(
    scenario: str,
    trial: Callable[[int, random.Random], Awaitable[Outcome]],
    total: int | None = None,
) -> list[Outcome]:
    """Runs the scenario's trials (`total`, or trials()) and fails, naming every bad one,
    unless all were good."""
    rng, seed = seeded(scenario)
    total, outcomes, started = total or trials(), [], time.monotonic()
    for number in range(1, total + 1):
        try:
            outcome = await trial(number, rng)
        except Exception as exc:  # counted and reported below, with the trial's number
            outcome = Outcome(number, "?", error=f"{type(exc).__name__}: {exc}")
        print(outcome.line(), flush=True)
        outcomes.append(outcome)
        if sum(not o.ok for o in outcomes) >= max_failures():
            break
    took = time.monotonic() - started
    bad = [o for o in outcomes if not o.ok]
    summary = (
        f"{scenario}: {len(outcomes) - len(bad)} of {len(outcomes)} trials good "
        f"({total - len(outcomes)} not run), lost {sum(o.lost for o in outcomes)}, repeated on "
        f"one socket {sum(o.repeated_on_socket for o in outcomes)}, in {took:.1f} s, seed {seed}"
    )
    print(summary, flush=True)
    assert not bad and len(outcomes) == total, summary + "\n" + "\n".join(o.line() for o in bad)
    return outcomes
