"""What an edge reconnecting after a master restart is owed (client buffer rules 5–6,
`GET /v1/session/{id}/frames`, issue 14 §1), and control frames acting once (session rule 6)."""

from __future__ import annotations

import uuid

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from client.sessions.buffer import FrameBuffer
from tests.client.harness import frame, recv, recv_until, running_client


def _fill(buffer: FrameBuffer, count: int, size: int = 10, sent: bool = True) -> list[str]:
    ids = []
    for n in range(count):
        message_id = f"m{n}"
        entry = buffer.add(message_id, "x" * size, live=sent)
        if entry is not None and sent:
            entry.sent = True
        ids.append(message_id)
    return ids


@settings(max_examples=200, deadline=None)
@given(
    count=st.integers(min_value=1, max_value=60),
    room=st.integers(min_value=10, max_value=300),
    cursor=st.integers(min_value=0, max_value=59),
    policy=st.sampled_from(["RING", "DROP"]),
)
def test_after_any_cursor_the_replay_plus_dropped_accounts_for_every_later_frame(
    count, room, cursor, policy
):
    """Whatever was evicted or discarded, held frames after the cursor and `dropped` add up
    to exactly the frames emitted after it, in order (exact `dropped`, issue 14 §1)."""
    buffer = FrameBuffer(room, policy)
    ids = _fill(buffer, count, sent=False)
    cursor = min(cursor, count - 1)
    resume = buffer.after(ids[cursor])
    assert resume.found
    replayed = [entry.message_id for entry in resume.frames]
    later = ids[cursor + 1 :]
    assert replayed == [m for m in later if m in replayed], "order kept"
    assert len(replayed) + resume.dropped == len(later)


def test_a_greeting_cursor_resumes_with_the_frames_emitted_after_it():
    buffer = FrameBuffer(10_000, "RING")
    _fill(buffer, 3)
    buffer.mark_between("greeting")
    _fill_more = [buffer.add(f"n{n}", "y") for n in range(2)]
    assert all(_fill_more)
    resume = buffer.after("greeting")
    assert resume.found and resume.dropped == 0
    assert [entry.message_id for entry in resume.frames] == ["n0", "n1"]
    assert not buffer.after("never-seen").found


async def test_frames_after_an_edges_cursor_over_http_include_sent_ones(tmp_path):
    async with running_client(tmp_path) as client:
        sid, ws = await client.start_session()
        await recv(ws), await recv(ws)
        await ws.send(frame("control.prompt.request", {"prompt_text": "hello"}, sid))
        turn = await recv_until(ws, "session.turn.end")
        cursor = turn[0]["message_id"]
        status, body = await client.request("GET", f"/v1/session/{sid}/frames?after={cursor}")
        assert status == 200, body
        assert body["found"] is True and body["dropped"] == 0
        ids = [orjson.loads(text)["message_id"] for text in body["frames"]]
        assert ids == [f["message_id"] for f in turn[1:]]  # sent already, still owed

        status, unknown = await client.request(
            "GET", f"/v1/session/{sid}/frames?after={uuid.uuid4()}"
        )
        assert status == 200 and unknown["found"] is False
        status, bad = await client.request("GET", f"/v1/session/{sid}/frames?after=not-an-id")
        assert status == 400 and bad["error_code"] == "INVALID_REQUEST"
        status, gone = await client.request(
            "GET", f"/v1/session/{uuid.uuid4()}/frames?after={cursor}"
        )
        assert status == 404 and gone["error_code"] == "SESSION_NOT_FOUND"
        status, _ = await client.request(
            "GET", f"/v1/session/{sid}/frames?after={cursor}", headers={}
        )
        assert status == 401


async def test_a_control_frame_sent_twice_acts_once(tmp_path):
    """Session rule 6: a hand-off retried by the edge with the same id runs one turn."""
    async with running_client(tmp_path) as client:
        sid, ws = await client.start_session()
        await recv(ws), await recv(ws)
        prompt = frame("control.prompt.request", {"prompt_text": "once"}, sid)
        await ws.send(prompt)
        await ws.send(prompt)
        await recv_until(ws, "session.turn.end")
        again = frame("control.prompt.request", {"prompt_text": "twice"}, sid)
        await ws.send(again)
        frames = await recv_until(ws, "session.turn.end")
        starts = [f for f in frames if f["type"] == "session.turn.start"]
        first_id = orjson.loads(prompt)["message_id"]
        assert [f["payload"]["prompt_message_id"] for f in starts] == [
            orjson.loads(again)["message_id"]
        ], "the repeated prompt ran a second turn"
        assert first_id != orjson.loads(again)["message_id"]


def test_only_the_last_remembered_places_are_kept(monkeypatch):
    """Rule 5's memory is bounded: past REMEMBERED evictions the oldest places are forgotten
    (the cursor is then unknown), and every newer one still says exactly where it stands."""
    import client.sessions.buffer as buffer_module

    monkeypatch.setattr(buffer_module, "REMEMBERED", 8)
    buffer = FrameBuffer(3, "RING")  # room for three one-byte frames
    ids = [f"m{n}" for n in range(20)]
    for message_id in ids:
        buffer.add(message_id, "x", live=True).sent = True
    # 17 evicted, 8 of them remembered: m9 … m16; m17 … m19 are held.
    assert not buffer.after("m8").found
    for n in range(9, 20):
        resume = buffer.after(f"m{n}")
        assert resume.found
        assert [entry.message_id for entry in resume.frames] == ids[max(n + 1, 17) :]
        assert resume.dropped == max(0, 17 - (n + 1))  # the evicted ones after the cursor
