"""One edge socket's loops end together (edge_socket rule 4, issue 14 §6).

The wire is faked (it is the WebSocket boundary); everything above it is the real EdgeSocket.
"""

from __future__ import annotations

import asyncio
import logging

import pytest

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
