"""Scenario 3 (issue 14 §1 across replicas): three replicas, the session's client link held by
one; SIGKILL that replica at a random frame of a turn, with one edge on another replica and one
on the killed replica (which reconnects elsewhere with its cursor); then restart it. Each edge
must receive every frame of the turn exactly once per socket and in order: both placements are
counted in every trial, each edge on its own."""

from __future__ import annotations

import asyncio

from tests.faults import trials
from tests.faults.agent import install, prompt_text
from tests.faults.replicas import QUICK_TAKEOVER, edge_on, holder, place
from tests.faults.tiers import sigkill
from tests.faults.trials import Outcome
from tests.faults.turns import TURN_FRAMES, TurnWatch, strike_when_started
from tests.scale.cluster import cluster

TAKEOVER = 30.0  # a lease (5 s) and a sweep (2 s) after a kill, with room on a busy machine


async def test_replica_sigkill_mid_turn_loses_and_repeats_nothing(
    processes, tmp_path, pg_url, redis_prefix
):
    redis, prefix = redis_prefix
    agents, markers = install(tmp_path)
    quick = {"agents": agents, "master_args": QUICK_TAKEOVER}
    async with cluster(processes, tmp_path, pg_url, prefix, **quick) as made:
        urls = made.replicas.urls
        sid, _ = await made.create_session()
        elsewhere, on_killed = edge_on(made, sid), edge_on(made, sid)

        async def trial(number, rng):
            held = await holder(made, redis, prefix, sid)
            other = rng.choice([i for i in range(len(urls)) if i != held])
            await place(elsewhere, urls[other])
            await place(on_killed, urls[held])
            at = rng.randrange(0, TURN_FRAMES)

            def live_first() -> list[str]:
                alive = [u for i, u in enumerate(urls) if made.replicas.procs[i].poll() is None]
                return sorted(alive, key=lambda u: u == urls[held])

            async def strike():
                sigkill(made.replicas.procs[held])
                await asyncio.to_thread(made.replicas.restart, processes, held)

            watches = [TurnWatch(elsewhere, number), TurnWatch(on_killed, number)]
            message_id = await elsewhere.prompt(prompt_text(f"t{number}"))
            for watch in watches:
                watch.message_id = message_id
            if at == 0:
                await strike_when_started(f"t{number}", markers, strike)
            async with asyncio.TaskGroup() as group:
                group.create_task(watches[0].follow(live_first, TAKEOVER, at or None, strike))
                group.create_task(watches[1].follow(live_first, TAKEOVER))
            point = f"replica {held} killed after frame {at} of {TURN_FRAMES}"
            mine = watches[0].count(Outcome(number, f"{point}; edge on replica {other}"))
            theirs = watches[1].count(Outcome(number, f"{point}; edge on the killed replica"))
            return merged(mine, theirs)

        await trials.run("replica SIGKILL", trial)


def merged(mine: Outcome, theirs: Outcome) -> Outcome:
    """One trial's outcome from both edges' counts; the second edge's line is kept as a note
    when it went wrong, so the report says which placement lost or repeated what."""
    mine.lost += theirs.lost
    mine.repeated_on_socket += theirs.repeated_on_socket
    mine.repeated_types += theirs.repeated_types
    mine.repeated_content += theirs.repeated_content
    mine.across_sockets += theirs.across_sockets
    mine.out_of_order |= theirs.out_of_order
    mine.point += f"; the edge on the killed replica used {theirs.sockets} sockets"
    if not theirs.ok:
        mine.notes.append(f"[edge on the killed replica: {theirs.line()}]")
    return mine
