"""A replica's relay loops are critical (master/edge/replicas/redis_relay.py rule 6, issue 29 §4): a
writer that dies is started again and loses nothing of what was queued; one that keeps dying
ends the replica. Two relays in one process on the machine's real Redis stand for two replicas
(as in test_redis_relay.py); the writer is killed the way a bug kills it — the session layer's
`ownership_lost`, which the writer calls when it finds itself fenced, raises."""

from __future__ import annotations

import contextlib
import logging

import pytest

from master.edge.replicas.redis_relay import RedisRelay
from runtime.tasks import RESTARTS
from tests.scale.conftest import REDIS_URL
from tests.scale.test_redis_relay import Hooks, edge_on, serve, until


class BrokenHooks(Hooks):
    """A session layer with a bug: letting a session go raises."""

    async def ownership_lost(self, session_id: str) -> None:
        await super().ownership_lost(session_id)
        raise RuntimeError(f"the session layer failed to let {session_id} go")


@pytest.fixture
async def broken_and_sound(redis_prefix):
    """Relay A (its hooks raise when it loses a session) and relay B, on one prefix."""
    _, prefix = redis_prefix
    made = []
    for hooks_class in (BrokenHooks, Hooks):
        relay = RedisRelay(REDIS_URL, prefix=prefix, replay_frames=500)
        hooks = hooks_class(lambda relay=relay: relay)
        await relay.start(hooks)
        made.append((relay, hooks))
    yield made
    for relay, _ in made:
        with contextlib.suppress(Exception):
            await relay.close()


async def kill_writer(a: RedisRelay, hooks_a: BrokenHooks, b: RedisRelay, session_id: str):
    """B takes `session_id` over behind A's back; A's next frame of it is fenced, and the
    writer dies in the call that reports it."""
    assert await a.claim(session_id)
    await a.redis.delete(a.leases.key(session_id))
    assert await b.claim(session_id)
    deaths = len(hooks_a.lost)
    a.publish(session_id, f"stale-{session_id}", "from the old holder", "agent.text.delta")
    await until(lambda: len(hooks_a.lost) == deaths + 1, f"A's writer fenced on {session_id}")


async def test_a_killed_writer_is_started_again_and_loses_nothing(broken_and_sound, caplog):
    caplog.set_level(logging.WARNING)
    (a, hooks_a), (b, _) = broken_and_sound
    assert await a.claim("kept")
    edge, wire = edge_on("kept")
    await b.attach(edge)
    task = await serve(edge)
    await kill_writer(a, hooks_a, b, "fenced")
    texts = [f"t{n}" for n in range(40)]
    for n, text in enumerate(texts):  # queued while the writer is dead
        a.publish("kept", f"m{n}", text, "agent.text.delta")
    await until(lambda: len(wire.sent) >= len(texts), "every frame on B's edge", limit=15)
    await until(lambda: a.writer.idle, "A's queue empty")
    assert wire.sent == texts  # all of them, in order, once
    assert await b.cursor("kept") == "m39"
    died = [r for r in caplog.records if r.getMessage() == "redis relay: writer failed"]
    assert len(died) == 1 and died[0].exc_info[0] is RuntimeError
    task.cancel()


async def test_a_writer_that_keeps_dying_ends_the_replica(
    broken_and_sound, critical_tasks_end_the_test, caplog
):
    caplog.set_level(logging.WARNING)
    (a, hooks_a), (b, _) = broken_and_sound
    for death in range(RESTARTS):
        await kill_writer(a, hooks_a, b, f"fenced-{death}")
        restarted = f"starting writer again (restart {death + 1} of {RESTARTS})"
        await until(lambda line=restarted: line in caplog.text, restarted)
    assert critical_tasks_end_the_test == []
    await kill_writer(a, hooks_a, b, "fenced-last")
    await until(lambda: critical_tasks_end_the_test == ["redis relay: writer"], "the replica ends")
    critical_tasks_end_the_test.clear()  # expected here: the fixture must not fail the test
