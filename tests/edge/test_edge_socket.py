"""One edge socket's loops end together (edge_socket rule 4, issue 14 §6).

The wire is faked (it is the WebSocket boundary); everything above it is the real EdgeSocket.
"""

from __future__ import annotations

import asyncio
import logging

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from master.edge.relay.edge_socket import INTERNAL_ERROR, NORMAL, EdgeSocket


class Wire:
    def __init__(self) -> None:
        self.inbound: asyncio.Queue = asyncio.Queue()
        self.sent: list[str] = []
        self.closed: tuple[int, str] | None = None
        self.receiving = asyncio.Event()
        self.receive_cancelled = asyncio.Event()
        self.send_error: BaseException | None = None

    async def send(self, data: str) -> None:
        if self.send_error is not None:
            raise self.send_error
        self.sent.append(data)

    async def receive(self) -> str:
        self.receiving.set()
        try:
            return await self.inbound.get()
        except asyncio.CancelledError:
            self.receive_cancelled.set()
            raise

    async def close(self, code: int, reason: str = "") -> None:
        if self.closed is not None:
            raise RuntimeError("Unexpected ASGI message 'websocket.close'")  # as uvicorn says
        self.closed = (code, reason)


def _edge(wire: Wire) -> EdgeSocket:
    return EdgeSocket(wire, user_id="u", session_id="s1", node_id="n1", max_backlog=10_000)


def _failures(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "rawp.master.edge.socket" and r.exc_info]


async def test_a_failing_receiver_is_logged_once_with_its_traceback_and_closes_with_1011(
    caplog,
):
    wire, seen = Wire(), []
    edge = _edge(wire)

    async def on_frame(data) -> None:
        seen.append(data)
        if data == "bad":
            raise ValueError("the data plane choked")

    await wire.inbound.put("fine")
    await wire.inbound.put("bad")
    await wire.inbound.put("never read")
    await asyncio.wait_for(edge.serve(on_frame), 5)

    assert seen == ["fine", "bad"]
    assert wire.closed == (INTERNAL_ERROR, "internal error")
    assert not edge.open and not edge.offer("more")
    failures = _failures(caplog)
    assert len(failures) == 1
    assert failures[0].exc_info[0] is ValueError  # the child's own error, not a group
    assert "the data plane choked" in caplog.text


async def test_an_edge_gone_mid_write_ends_the_socket_without_a_traceback(caplog):
    wire = Wire()
    wire.send_error = ConnectionResetError("peer went away")
    edge = _edge(wire)
    assert edge.offer('{"n": 1}')

    async def on_frame(_data) -> None:
        raise AssertionError("nothing arrives")

    await asyncio.wait_for(edge.serve(on_frame), 5)
    assert wire.closed == (NORMAL, "")
    assert wire.receive_cancelled.is_set()  # the receiver did not outlive the sender
    assert _failures(caplog) == []


async def test_a_kick_ends_both_loops_and_closes_once_with_its_reason():
    wire = Wire()
    edge = _edge(wire)

    async def on_frame(_data) -> None:
        return None

    serving = asyncio.create_task(edge.serve(on_frame))
    await asyncio.wait_for(wire.receiving.wait(), 5)
    edge.kick(1001, "session ended")
    await asyncio.wait_for(serving, 5)
    assert wire.closed == (1001, "session ended")
    assert wire.receive_cancelled.is_set()


async def test_cancelling_serve_passes_through_and_ends_the_loops():
    wire = Wire()
    edge = _edge(wire)

    async def on_frame(_data) -> None:
        return None

    serving = asyncio.create_task(edge.serve(on_frame))
    await asyncio.wait_for(wire.receiving.wait(), 5)
    serving.cancel()
    with pytest.raises(asyncio.CancelledError):
        await serving
    assert wire.receive_cancelled.is_set()
    assert not edge.open  # a socket whose serve ended takes no more frames


class DirectWire(Wire):
    """A wire that can also write at once (`write_now`), unless its flow control holds —
    and whose batched send yields, as a socket write that waits does."""

    def __init__(self) -> None:
        super().__init__()
        self.holding = False
        self.direct = 0

    def write_now(self, text: str) -> bool:
        if self.holding:
            return False
        self.sent.append(text)
        self.direct += 1
        return True

    async def send_many(self, texts: list[str]) -> None:
        await asyncio.sleep(0)
        self.sent.extend(texts)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["frame", "frames", "yield", "hold", "release"]), max_size=40))
def test_frames_written_at_once_or_queued_reach_the_edge_in_order(steps):
    """Rule 6: an idle sender's frame is written by `offer` itself; a frame offered while
    others wait or are being written queues behind them. The edge sees every frame once, in
    the order offered, whatever the interleaving."""

    async def scenario() -> tuple[list[str], list[str], int]:
        wire = DirectWire()
        edge = _edge(wire)
        serving = asyncio.ensure_future(edge.serve(_ignore))
        offered: list[str] = []
        try:
            await _sender_idle(edge)
            for step in steps:
                if step in ("frame", "frames"):
                    for _ in range(1 if step == "frame" else 3):
                        offered.append(f"f{len(offered)}")
                        assert edge.offer(offered[-1])
                elif step == "yield":
                    await asyncio.sleep(0)
                else:
                    wire.holding = step == "hold"
            wire.holding = False
            for _ in range(50):
                if len(wire.sent) == len(offered):
                    break
                await asyncio.sleep(0)
        finally:
            edge.kick(NORMAL, "done")
            await asyncio.wait_for(serving, 5)
        return offered, wire.sent, wire.direct

    offered, sent, direct = asyncio.run(scenario())
    assert sent == offered
    if steps and steps[0] in ("frame", "frames"):
        assert direct >= 1  # the first frame found the sender idle


async def test_an_idle_edge_gets_its_frame_without_waking_the_sender():
    wire = DirectWire()
    edge = _edge(wire)
    serving = asyncio.ensure_future(edge.serve(_ignore))
    try:
        await _sender_idle(edge)  # the sender waits on an empty queue
        assert edge.offer("one")
        assert wire.sent == ["one"] and wire.direct == 1 and edge.backlog == 0  # written already
        wire.holding = True  # the wire cannot write now: the frame queues for the sender
        assert edge.offer("two") and wire.sent == ["one"]
        wire.holding = False
        assert edge.offer("three") and wire.direct == 1  # "two" is ahead of it: queued too
        for _ in range(20):
            await asyncio.sleep(0)
        assert wire.sent == ["one", "two", "three"] and edge.backlog == 0
    finally:
        edge.kick(NORMAL, "done")
        await asyncio.wait_for(serving, 5)


async def _ignore(data) -> None:
    return None


async def _sender_idle(edge: EdgeSocket) -> None:
    for _ in range(100):
        if edge._waiter is not None:
            return
        await asyncio.sleep(0)
    raise AssertionError("the sender never waited on its queue")
