"""Scenario 6 (issue 14 §2): a prompt sent through one replica while the replica holding the
session's client link is frozen (SIGSTOP) or has just been killed (SIGKILL, its lease not yet
expired). It must either run exactly once — one `session.turn.start` whose `prompt_message_id`
is the prompt's `message_id` — or be answered with `session.error CLIENT_UNAVAILABLE` whose
`ref_message_id` is that id; and the same `message_id` sent again once the holder is back (or
replaced) runs it exactly once in all: never twice, never not at all."""

from __future__ import annotations

import asyncio

from tests.faults import trials
from tests.faults.agent import install, prompt_text
from tests.faults.edge import RecordingEdge
from tests.faults.replicas import QUICK_TAKEOVER, edge_on, holder, place
from tests.faults.tiers import sigcont, sigkill, sigstop
from tests.faults.trials import Outcome, repeats_on_sockets
from tests.scale.cluster import cluster

ANSWER = 15.0  # the prompt's fate must be known within this: a turn start or a refusal
AGAIN = 30.0  # resending until the session is held again (a lease and a sweep after a kill)


async def within(outcome: Outcome, failure: str, waiting) -> bool:
    """Awaits `waiting`; a timeout is noted in `outcome` as `failure` (the trial goes on to be
    counted) and answers False."""
    try:
        await waiting
    except TimeoutError:
        outcome.notes.append(failure)
        return False
    return True


def answer_to(message_id: str):
    """A predicate: the frame that decides what became of the prompt `message_id`."""

    def decides(received: dict) -> bool:
        payload = received.get("payload", {})
        return (
            received["type"] == "session.turn.start"
            and payload.get("prompt_message_id") == message_id
        ) or (received["type"] == "session.error" and payload.get("ref_message_id") == message_id)

    return decides


def turn_end_of(edge: RecordingEdge, message_id: str):
    """A predicate: the `session.turn.end` of the turn that ran the prompt `message_id`."""

    def ends(received: dict) -> bool:
        starts = [
            f.get("turn_id")
            for log in edge.logs
            for f in log.frames
            if f["type"] == "session.turn.start"
            and f["payload"].get("prompt_message_id") == message_id
        ]
        return received["type"] == "session.turn.end" and received.get("turn_id") in starts

    return ends


async def delivery_trials(scenario: str, processes, made, redis, prefix: str, freeze: bool) -> None:
    urls = made.replicas.urls
    sid, _ = await made.create_session()
    edge = edge_on(made, sid)

    async def trial(number, rng):
        held = await holder(made, redis, prefix, sid)
        other = rng.choice([i for i in range(len(urls)) if i != held])
        await place(edge, urls[other])
        here = lambda: [urls[other]]  # noqa: E731 - the edge's one replica in this trial
        first, mark = len(edge.logs) - 1, len(edge.logs[-1].frames)
        victim = made.replicas.procs[held]
        outcome = Outcome(number, f"replica {held} {'stopped' if freeze else 'killed'}")

        (sigstop if freeze else sigkill)(victim)
        text = prompt_text(f"t{number}", lines=3, pause=0.001)
        message_id = await edge.prompt(text)
        answered: list[dict] = []

        async def note(received: dict) -> None:
            if answer_to(message_id)(received):
                answered.append(received)

        await within(
            outcome,
            f"vanished: no turn start and no session.error within {ANSWER}s",
            edge.follow(answer_to(message_id), here, ANSWER, note),
        )
        if freeze:
            sigcont(victim)
        ran = bool(answered) and answered[0]["type"] == "session.turn.start"
        if answered and not ran:
            code = answered[0]["payload"].get("code")
            outcome.point += f", answered {code}"
            if code != "CLIENT_UNAVAILABLE":
                outcome.notes.append(f"refused with {code}, not CLIENT_UNAVAILABLE")
        elif ran:
            outcome.point += ", ran at once"

        async def resend() -> None:
            """The same message_id again until it runs; if it ran, once (to be dropped)."""
            while True:
                answered.clear()
                await edge.prompt(text, message_id=message_id)
                if ran:
                    return
                await edge.follow(answer_to(message_id), here, AGAIN, note)
                if answered[-1]["type"] == "session.turn.start":
                    return
                await asyncio.sleep(0.2)  # a retry interval after CLIENT_UNAVAILABLE

        async def resend_until_done() -> None:
            if await within(
                outcome,
                f"resent, it did not run within {AGAIN}s",
                asyncio.wait_for(resend(), AGAIN),
            ):
                await within(
                    outcome,
                    f"its turn did not end within {AGAIN}s",
                    edge.follow(turn_end_of(edge, message_id), here, AGAIN),
                )

        async with asyncio.TaskGroup() as group:
            if not freeze:  # back to three replicas while another takes the session over
                group.create_task(asyncio.to_thread(made.replicas.restart, processes, held))
            group.create_task(resend_until_done())
        # A fence: the next prompt's end means every frame of the earlier turns has come.
        fence = await edge.prompt(prompt_text(f"fence{number}", lines=1, pause=0))
        await within(
            outcome,
            f"a later prompt did not end within {AGAIN}s",
            edge.follow(turn_end_of(edge, fence), here, AGAIN),
        )

        frames = edge.logs[first].frames[mark:] + [
            f for log in edge.logs[first + 1 :] for f in log.frames
        ]
        runs = sum(
            1
            for f in {f["message_id"]: f for f in frames}.values()
            if f["type"] == "session.turn.start"
            and f["payload"].get("prompt_message_id") == message_id
        )
        if runs != 1:
            outcome.notes.append(f"the prompt ran {runs} times")
        marks = [mark] + [0] * (len(edge.logs) - 1 - first)
        repeats_on_sockets(outcome, edge.logs[first:], marks)
        outcome.sockets = len(edge.logs) - first
        return outcome

    await trials.run(scenario, trial)


async def test_a_prompt_while_the_holder_is_stopped_runs_once_or_is_refused(
    processes, tmp_path, pg_url, redis_prefix
):
    redis, prefix = redis_prefix
    agents, _ = install(tmp_path)
    quick = {"agents": agents, "master_args": QUICK_TAKEOVER}
    async with cluster(processes, tmp_path, pg_url, prefix, **quick) as made:
        await delivery_trials("prompt, holder SIGSTOP", processes, made, redis, prefix, freeze=True)
