"""Detach and replay (RAWP §5.1, §7.2, dps-profile §8): a socket cut mid-turn loses nothing
and repeats nothing; an overflowing buffer follows the pinned RING/DROP policy."""

from __future__ import annotations

import asyncio
import sys

import orjson
import psutil

from rawp.config import DEFAULT_LIMITS
from rawp.session_state import SessionState
from tests.client.harness import frame, recv, recv_until, running_client


async def eventually(check, what: str, wait: float = 20.0) -> None:
    """Poll a condition the client reaches on its own (not a timing assertion)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait
    while not check():
        assert loop.time() < deadline, f"never happened: {what}"
        await asyncio.sleep(0.02)


def cut(ws) -> None:
    """Drop the TCP connection without a closing handshake, as a network failure would."""
    ws.transport.abort()


async def reattach(client, sid: str, last_message_id: str | None):
    extra = {"last_message_id": last_message_id} if last_message_id else {}
    made = await client.init(session_id=sid, reattach=True, **extra)
    assert made["status"] == 200, made
    assert made["body"]["status"] in ("RUNNING", "DETACHED")
    ws = await client.connect(sid, made["ticket"])
    greeting = [await recv(ws), await recv(ws), await recv(ws)]
    assert [f["type"] for f in greeting] == [
        "session.capabilities",
        "tool.catalog.publish",
        "session.history",
    ]
    return ws, greeting[2]["payload"]


def turn_idle(session) -> bool:
    return session.turn_id is None and session.turns.empty()


async def test_a_cut_mid_turn_then_reattach_loses_and_repeats_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("RAWP_DEMO_PAUSE", "0.05")
    async with running_client(tmp_path) as client:
        sid, ws = await client.start_session()
        await recv(ws), await recv(ws)
        await ws.send(frame("control.prompt.request", {"prompt_text": "long please"}, sid))
        before = await recv_until(ws, "agent.text.delta")
        cut(ws)
        session = client.services.sessions.sessions[sid]
        await eventually(lambda: session.state == SessionState.DETACHED, "detached")
        assert session.turn_id is not None  # the agent keeps running while detached
        cursor = before[-1]["message_id"]
        await eventually(
            lambda: len(session.buffer.replay_after(cursor)) >= 3, "frames made while detached"
        )
        ws2, history = await reattach(client, sid, before[-1]["message_id"])
        after = await recv_until(ws2, "session.turn.end")
        assert history["since_message_id"] == before[-1]["message_id"]
        assert history["replayed"] >= 1 and history["dropped"] == 0
        assert history["policy"] == "RING"
        ids_before = [f["message_id"] for f in before]
        ids_after = [f["message_id"] for f in after]
        assert not set(ids_before) & set(ids_after), "a frame was repeated"
        buffered = [entry.message_id for entry in session.buffer.frames]
        assert ids_before + ids_after == buffered, "a frame was lost or reordered"
        frames = before + after
        text = "".join(f["payload"]["text"] for f in frames if f["type"] == "agent.text.delta")
        done = next(f for f in frames if f["type"] == "agent.text.done")
        assert text == done["payload"]["text"] and len(text) > 5000


async def test_reattach_without_a_cursor_replays_only_what_was_never_sent(tmp_path, monkeypatch):
    monkeypatch.setenv("RAWP_DEMO_PAUSE", "0.05")
    async with running_client(tmp_path) as client:
        sid, ws = await client.start_session()
        await recv(ws), await recv(ws)
        await ws.send(frame("control.prompt.request", {"prompt_text": "hi"}, sid))
        before = await recv_until(ws, "session.turn.end")
        await ws.close()
        session = client.services.sessions.sessions[sid]
        await eventually(lambda: session.state == SessionState.DETACHED, "detached")
        ws2, history = await reattach(client, sid, None)
        assert history["replayed"] == 0 and before
        await ws2.send(frame("control.prompt.request", {"prompt_text": "again"}, sid))
        assert (await recv(ws2))["type"] == "session.turn.start"


async def overflow(tmp_path, monkeypatch, policy: str):
    monkeypatch.setenv("RAWP_DEMO_PAUSE", "0.05")
    limits = DEFAULT_LIMITS.model_copy(
        update={"max_frame_size": 1024, "max_buffer_size": 4096, "buffer_overflow_policy": policy}
    )
    async with running_client(tmp_path, limits=limits) as client:
        sid, ws = await client.start_session()
        await recv(ws), await recv(ws)
        request = frame("control.prompt.request", {"prompt_text": "long please"}, sid)
        await ws.send(request)
        start = await recv(ws)
        assert start["type"] == "session.turn.start"
        cut(ws)
        session = client.services.sessions.sessions[sid]
        await eventually(lambda: session.state == SessionState.DETACHED, "detached")
        await eventually(lambda: turn_idle(session), "the turn ended while detached")
        assert session.buffer.bytes <= 4096
        ws2, history = await reattach(client, sid, start["message_id"])
        replay = []
        for _ in range(history["replayed"]):
            raw = await asyncio.wait_for(ws2.recv(), 10)
            assert len(raw.encode()) <= 1024
            replay.append(orjson.loads(raw))
        assert sum(len(orjson.dumps(f)) for f in replay) <= 4096 + 64 * len(replay)
        assert history["policy"] == policy and history["dropped"] > 0
        assert replay and all(f["turn_id"] == start["payload"]["turn_id"] for f in replay)
        return replay


async def test_ring_keeps_the_newest_frames(tmp_path, monkeypatch):
    replay = await overflow(tmp_path, monkeypatch, "RING")
    assert replay[-1]["type"] == "session.turn.end"
    assert replay[0]["type"] != "agent.state.changed"  # the first frames were evicted


async def test_drop_keeps_the_oldest_frames(tmp_path, monkeypatch):
    replay = await overflow(tmp_path, monkeypatch, "DROP")
    assert replay[0]["type"] == "agent.state.changed"
    assert replay[0]["payload"]["current_state"] == "thinking"
    assert "session.turn.end" not in [f["type"] for f in replay]


async def test_reattach_after_the_window_is_404_and_the_agent_is_gone(tmp_path, monkeypatch):
    monkeypatch.setenv("RAWP_DEMO_PAUSE", "30")
    limits = DEFAULT_LIMITS.model_copy(update={"reattach_window": 30})
    async with running_client(tmp_path, limits=limits) as client:
        sid, ws = await client.start_session()
        await recv(ws), await recv(ws)
        await ws.send(frame("control.prompt.request", {"prompt_text": "slow"}, sid))
        await recv_until(ws, "agent.thinking.delta")
        agents = [
            p
            for p in psutil.Process().children(recursive=True)
            if "demo-agent" in " ".join(p.cmdline())
        ]
        assert len(agents) == 2  # the agent and its supervisor (client/processes/supervisor.py)
        cut(ws)
        session = client.services.sessions.sessions[sid]
        await eventually(lambda: session.state == SessionState.DETACHED, "detached")
        client.clock.advance(29)
        await asyncio.sleep(0.2)  # several sweeps run: the window is not over yet
        assert session.state == SessionState.DETACHED
        client.clock.advance(2)
        made = await client.init(session_id=sid, reattach=True)
        assert (made["status"], made["body"]["error_code"]) == (404, "SESSION_NOT_FOUND")
        assert session.state == SessionState.TERMINATED
        # The agent is being ended (SIGTERM, SIGKILL after the grace) and reaped: no zombie.
        for agent in agents:
            await eventually(lambda a=agent: not psutil.pid_exists(a.pid), "the agent is gone")


async def test_reattach_window_zero_terminates_with_the_socket(tmp_path, monkeypatch):
    monkeypatch.setenv("RAWP_DEMO_PAUSE", "0")
    limits = DEFAULT_LIMITS.model_copy(update={"reattach_window": 0})
    async with running_client(tmp_path, limits=limits) as client:
        sid, ws = await client.start_session()
        await recv(ws)
        session = client.services.sessions.sessions[sid]
        cut(ws)
        await eventually(lambda: session.state == SessionState.TERMINATED, "terminated")
        await eventually(lambda: client.services.sessions.count == 0, "removed")
        made = await client.init(session_id=sid, reattach=True)
        assert made["status"] == 404


async def test_a_reattach_takes_over_a_socket_the_client_still_thinks_alive(tmp_path, monkeypatch):
    monkeypatch.setenv("RAWP_DEMO_PAUSE", "0")
    async with running_client(tmp_path) as client:
        sid, old = await client.start_session()
        await recv(old), await recv(old)
        await old.send(frame("control.prompt.request", {"prompt_text": "hi"}, sid))
        seen = await recv_until(old, "session.turn.end")
        new, history = await reattach(client, sid, seen[-1]["message_id"])
        assert history["replayed"] == 0 and history["dropped"] == 0
        await asyncio.wait_for(old.wait_closed(), 10)  # the old socket was let go
        await new.send(frame("control.prompt.request", {"prompt_text": "again"}, sid))
        assert (await recv(new))["type"] == "session.turn.start"


# Random text: permessage-deflate (which the test's socket offers) must not shrink 40 MB into
# what the kernel's socket buffers hold, or a client that sends as fast as its agent writes
# never finds the socket full (issue 20: it no longer falls behind on its own).
FLOOD = """
import json, os, sys
for _ in range(40000):
    text = os.urandom(500).hex()
    line = json.dumps({"type": "agent.text.delta", "payload": {"content_index": 0, "text": text}})
    sys.stdout.write(line + "\\n")
sys.stdout.flush()
"""


async def test_a_socket_that_stops_reading_is_let_go_and_memory_stays_bounded(tmp_path):
    script = tmp_path / "flood.py"
    script.write_text(FLOOD)
    agents = tmp_path / "agents.toml"
    agents.write_text(
        f'[agents.flood]\nkind = "script"\nmode = "jsonl"\ncommand = ["{sys.executable}", '
        f'"{script}"]\n'
    )
    cap = 64 * 1024
    limits = DEFAULT_LIMITS.model_copy(
        update={"max_frame_size": 2048, "max_buffer_size": cap, "rate_limit": 1000}
    )
    async with running_client(tmp_path, limits=limits, agents_file=agents) as client:
        sid, ws = await client.start_session(agent="flood")
        await recv(ws), await recv(ws)
        await ws.send(frame("control.prompt.request", {"prompt_text": "go"}, sid))
        # ... and never read again: the master is stuck, the agent goes on writing 40 MB.
        session = client.services.sessions.sessions[sid]
        await eventually(lambda: session.state == SessionState.DETACHED, "let go", wait=60)
        await eventually(lambda: turn_idle(session), "the turn ended", wait=60)
        assert session.buffer.bytes <= cap
        assert session.buffer.dropped > 0  # RING: the oldest unsent frames made room
        cut(ws)
        ws2, history = await reattach(client, sid, None)
        assert history["dropped"] > 0 and history["replayed"] >= 1
        replay = [await recv(ws2) for _ in range(history["replayed"])]
        assert replay[-1]["type"] == "session.turn.end"
