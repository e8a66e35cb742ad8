"""Client frames relayed by the link's reader itself (master.edge.links.client_link rule 9,
link_reader rule 7; issue 35): no hand-off to the link's task per frame, and still in the
order the client sent them — also when a frame that needs a wait (a `session.usage` whose
database write is retried) is followed by frames that need none. The master is real, the
client a fake WebSocket server on loopback, the edge socket Quart's test client; the database
refuses the usage write for real (its table is renamed away)."""

from __future__ import annotations

import asyncio
import logging

from sqlalchemy import text

from tests.edge.stack import frame
from tests.edge.test_budgets import _greeted, _recv, _session, _usage
from tests.edge.test_usage_failures import AWAY, BACK, _sql, _until


def _delta(session_id: str, number: int) -> str:
    return frame("agent.text.delta", {"content_index": 0, "text": f"{number}"}, session_id)


async def test_frames_are_relayed_by_the_reader_in_order(edge_master, fake_client):
    _, sid, ticket = await _session(edge_master, fake_client)
    link = edge_master.services.edge.sessions.live[sid].link
    async with edge_master.websocket(sid, ticket) as ws:
        await _greeted(ws)
        before = link.taken_now
        for number in range(50):
            await fake_client.push(sid, _delta(sid, number))
        texts = [(await _recv(ws))["payload"]["text"] for _ in range(50)]
    assert texts == [f"{number}" for number in range(50)]
    assert link.taken_now - before == 50  # none went through the task's queue


async def test_frames_behind_a_usage_write_wait_for_it(edge_master, fake_client, caplog):
    caplog.set_level(logging.WARNING, logger="rawp.master.edge.usage")
    _, sid, ticket = await _session(edge_master, fake_client)
    link = edge_master.services.edge.sessions.live[sid].link
    db = edge_master.services.db
    async with edge_master.websocket(sid, ticket) as ws:
        await _greeted(ws)
        await _sql(db, AWAY)
        try:
            await fake_client.push(sid, _usage(sid, cost=0.5, tokens=(2, 1)))
            await _until(lambda: "recording usage failed, retrying" in caplog.text, "a retry")
            taken = link.taken_now
            for number in range(20):  # while the usage write is being retried
                await fake_client.push(sid, _delta(sid, number))
            await asyncio.sleep(0.2)  # time for them to overtake it, were that possible
            assert link.taken_now == taken  # each waited in the queue behind the usage frame
        finally:
            await _sql(db, BACK)
        kinds = [(await _recv(ws))["type"] for _ in range(21)]
        assert kinds == ["session.usage"] + ["agent.text.delta"] * 20
        await fake_client.push(sid, _delta(sid, 20))  # the queue drained: the reader again
        assert (await _recv(ws))["payload"]["text"] == "20"
        await _until(lambda: link.taken_now == taken + 1, "the reader to take the frame")
    async with db.connect() as conn:
        recorded = await conn.scalar(text("SELECT count(*) FROM usage_records"))
    assert recorded == 1


async def test_frames_right_behind_a_usage_frame_keep_their_place(edge_master, fake_client):
    """The usage frame goes to the queue; the deltas right behind it, read before the link's
    task has taken it from there, must queue behind it (link_reader rule 7)."""
    _, sid, ticket = await _session(edge_master, fake_client)
    async with edge_master.websocket(sid, ticket) as ws:
        await _greeted(ws)
        for round_ in range(5):
            texts = [_usage(sid, cost=0.01, tokens=(1, 1))]
            texts += [_delta(sid, number) for number in range(10)]
            socket = fake_client.sessions[sid].sockets[-1]
            await asyncio.gather(*(socket.send_str(t) for t in texts))  # one write burst
            kinds = [(await _recv(ws))["type"] for _ in texts]
            assert kinds == ["session.usage"] + ["agent.text.delta"] * 10, round_
