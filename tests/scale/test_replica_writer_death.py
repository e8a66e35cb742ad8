"""A master replica whose Redis writer keeps dying ends itself, and its turn goes on through
another replica with nothing lost (issue 29 §4; master/edge/replicas/redis_relay.py rule 6). Real
`rawp master` replicas A and B on PostgreSQL and Redis, a real client paired through A, which
holds the session's client link; A's Redis link passes through `WriterPoison`, which — once
armed — spoils the reply to A's writer so that its Redis client raises a decoding error, a
failure no `except RedisError` catches, as a bug would."""

from __future__ import annotations

import asyncio
import re

from runtime.tasks import EXIT_FATAL
from tests.edge.stack import recv_until
from tests.faults.replicas import QUICK_TAKEOVER
from tests.scale.cluster import cluster
from tests.scale.conftest import REDIS_URL
from tests.scale.redis_poison import WriterPoison
from tests.scale.test_cross_relay import END, deltas, ids, numbered, prompt

A, B = 0, 1
LINES = 40


async def test_a_replica_whose_writer_keeps_dying_exits_and_its_turn_loses_nothing(
    processes, tmp_path, pg_url, redis_prefix
):
    _, prefix = redis_prefix
    redis_port = int(re.search(r":(\d+)", REDIS_URL.split("//", 1)[1]).group(1))
    poison = WriterPoison(redis_port)
    a_redis = f"redis://127.0.0.1:{poison.port}/0"
    try:
        async with cluster(
            processes, tmp_path, pg_url, prefix, count=2, redis_urls={A: a_redis},
            master_args=QUICK_TAKEOVER,
        ) as made:  # fmt: skip
            sid, _ = await made.create_session()  # A holds it
            on_b = await made.attach(sid, B)
            await on_b.send(prompt(sid, 3))
            assert deltas(await recv_until(on_b, END)) == numbered(3)  # A → Redis → B works

            poison.armed = True
            await on_b.send(prompt(sid, LINES, 0.05))
            turn = await recv_until(on_b, END, wait=60)
            a = made.replicas.procs[A]
            assert await asyncio.to_thread(a.wait, 30) == EXIT_FATAL  # ended itself, non-zero
            assert poison.spoilt >= 4  # the first death and three restarts
            log = made.replicas.logs[A].read_text()
            assert log.count("CRITICAL") == 1 and "writer died 4 times" in log
            # Nothing lost, nothing twice: B took the session over and the client replayed
            # what A never wrote.
            assert deltas(turn) == numbered(LINES)
            assert len(set(ids(turn))) == len(turn)
            assert turn[-1]["payload"]["stop_reason"] == "end_turn"
    finally:
        poison.close()
