"""TERMINATED is final on every replica (issue 14 §5): two real `rawp master` replicas on the
machine's PostgreSQL and Redis, a real client behind a CuttableProxy. Replica A creates each
session, so it holds the client link; the session is DELETEd through replica B while the link
is cut at a random moment around that DELETE — before it, during it, after it — so that A's
link drops and reattaches (DETACH, ATTACH) racing B's TERMINATE, and the client's own close
of the deleted session drops A's link again.

Whatever the order, each session must end TERMINATED in the database, never be listed again
by either replica, and no write at all may reach its row after TERMINATED — not A's link, not
A's or B's takeover sweep: a trigger on the real table records every status written, and each
session's record must be a walk along `rawp.session_state`'s table with TERMINATED written
once, last."""

from __future__ import annotations

import asyncio
import itertools
import random

from sqlalchemy import text

from master.storage.db import Database
from rawp.session_state import SessionEvent, SessionState, can, next_state
from tests.scale.cluster import cluster

A, B = 0, 1
TRIALS = 30
SWEEP = 2.0  # seconds between a replica's takeover sweeps (master.edge.sessions.held_links)


# Every status written to a session row, in commit order: a trigger on the real table (the
# test's own instrument; the code under test never sees it). A refused conditional UPDATE
# matches no row and so writes nothing here.
AUDIT = [
    "CREATE TABLE rawp_test_status_log (seq bigserial PRIMARY KEY, session_id varchar(36),"
    " status varchar(20))",
    "CREATE FUNCTION rawp_test_log_status() RETURNS trigger AS $$ BEGIN"
    " INSERT INTO rawp_test_status_log (session_id, status) VALUES (NEW.id, NEW.status);"
    " RETURN NEW; END $$ LANGUAGE plpgsql",
    "CREATE TRIGGER rawp_test_status AFTER INSERT OR UPDATE OF status ON sessions"
    " FOR EACH ROW EXECUTE FUNCTION rawp_test_log_status()",
]
UNAUDIT = [
    "DROP TRIGGER IF EXISTS rawp_test_status ON sessions",
    "DROP FUNCTION IF EXISTS rawp_test_log_status()",
    "DROP TABLE IF EXISTS rawp_test_status_log",
]


async def _sql(db: Database, statements: list[str]) -> None:
    async with db.begin() as conn:
        for statement in statements:
            await conn.execute(text(statement))


async def _histories(db: Database, session_ids: list[str]) -> dict[str, list[str]]:
    """Each session's statuses as written, oldest first."""
    async with db.connect() as conn:
        rows = await conn.execute(
            text(
                "SELECT session_id, status FROM rawp_test_status_log"
                " WHERE session_id = ANY(:ids) ORDER BY seq"
            ),
            {"ids": session_ids},
        )
        histories: dict[str, list[str]] = {sid: [] for sid in session_ids}
        for session_id, status in rows:
            histories[session_id].append(status)
        return histories


def _off_the_table(history: list[str]) -> str | None:
    """Why `history` is not a walk along rawp.session_state's table ending in one TERMINATED,
    or None when it is."""
    if not history or history[0] != "INIT":
        return "does not start in INIT"
    for before, after in itertools.pairwise(history):
        if not any(
            can(SessionState(before), event) and next_state(SessionState(before), event) == after
            for event in SessionEvent
        ):
            return f"{before} -> {after} is not in the table"
    if history[-1] != "TERMINATED":
        return "does not end TERMINATED"
    return None


async def _later(delay: float, coroutine):
    """`coroutine` after `delay` seconds (none if negative): the random moment is the test."""
    await asyncio.sleep(max(0.0, delay))
    return await coroutine


async def _cut(proxy) -> None:
    proxy.cut()


async def _listed(made, index: int) -> set[str]:
    status, body = await made.on(index).call("GET", f"/v1/edge/sessions?node_id={made.node_id}")
    assert status == 200, body
    return {session["session_id"] for session in body["sessions"]}


async def test_a_delete_on_one_replica_raced_against_a_link_drop_on_the_other(
    processes, tmp_path, pg_url, redis_prefix
):
    _, prefix = redis_prefix
    db = Database(pg_url)
    rng = random.Random(14)
    ended: list[str] = []
    try:
        # Each trial makes five Edge API calls as fast as the replicas answer: on a quick
        # machine that outruns a person's 30/s budget (the budget itself: test_replicas).
        async with cluster(
            processes, tmp_path, pg_url, prefix, count=2, proxy=True, edge_rate="1000/s"
        ) as made:
            await _sql(db, AUDIT)
            took = 0.05  # how long B's last DELETE took: the span the cuts are spread over
            for trial in range(TRIALS):
                sid, _ = await made.create_session()  # A holds the client link
                # The cut falls at a random point from a little before B's DELETE to its end:
                # A's link drops before B's write, around it, or after it.
                offset = rng.uniform(-0.03, took)
                started = asyncio.get_running_loop().time()
                deleted, _ = await asyncio.gather(
                    _later(-offset, made.on(B).call("DELETE", f"/v1/edge/sessions/{sid}")),
                    _later(offset, _cut(made.proxy)),
                )
                took = asyncio.get_running_loop().time() - started - max(0.0, -offset)
                assert deleted[0] == 204, (trial, deleted)
                ended.append(sid)
                history = (await _histories(db, [sid]))[sid]
                assert history[-1] == "TERMINATED", (trial, history)
                for index in (A, B):
                    assert sid not in await _listed(made, index), (trial, index)

            # Both replicas' links settle and their sweeps run; nothing may write to an ended
            # row meanwhile. Absence can only be watched for a while: three sweeps of each.
            deadline = asyncio.get_running_loop().time() + 3 * SWEEP
            while asyncio.get_running_loop().time() < deadline:
                histories = await _histories(db, ended)
                wrong = {sid: h for sid, h in histories.items() if _off_the_table(h)}
                assert not wrong, {sid: (_off_the_table(h), h) for sid, h in wrong.items()}
                await asyncio.sleep(0.2)
            for index in (A, B):
                assert not (set(ended) & await _listed(made, index))
            # Both replicas still serve: a new session starts on A and ends through B.
            sid, _ = await made.create_session()
            assert sid in await _listed(made, B)
            assert (await made.on(B).call("DELETE", f"/v1/edge/sessions/{sid}"))[0] == 204
            logs = "".join(log.read_text() for log in made.replicas.logs)
    finally:
        await _sql(db, UNAUDIT)
        await db.dispose()
    assert len(ended) == TRIALS >= 20
    # What the races took (for the reader of -s output; the outcome is asserted above).
    drops = logs.count("dropped; reattaching")
    refused = logs.count("refused, the session is TERMINATED")
    print(f"\n{TRIALS} trials: {drops} link drops, {refused} late writes refused")
