"""A served socket owns its tasks (issue 14 §6): a loop that fails is logged once, with its
traceback, and ends the connection cleanly; cancellation passes through and takes the
socket's searches with it. The socket is a fake at the wire (the `Socket` protocol); the
session, its outbox and the handler are the real ones."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from client.files.paths import PathGuard
from client.sessions.session import Session
from client.sessions.stream import StreamHandler
from rawp.clock import FakeClock, new_id
from rawp.config import DEFAULT_LIMITS, PinnedConfig
from rawp.events import FileSearch
from tests.client.harness import frame


class WireSocket:
    """Frames in from a queue, frames out to a list; `fail` makes the next receive raise."""

    def __init__(self) -> None:
        self.incoming: asyncio.Queue[str | Exception] = asyncio.Queue(maxsize=16)
        self.sent: list[str] = []

    async def send(self, data: str) -> None:
        self.sent.append(data)

    async def receive(self) -> str:
        item = await self.incoming.get()
        if isinstance(item, Exception):
            raise item
        return item


class SlowSearch:
    """A search that never answers until cancelled; records that it was."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.cancelled = asyncio.Event()

    async def search(self, request: FileSearch, workspace: Path):
        self.started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled.set()
            raise


def make_session(tmp_path: Path) -> Session:
    pinned = PinnedConfig(limits=DEFAULT_LIMITS, limits_version=1, capabilities_version=1)
    return Session(
        new_id(),
        agent_name="demo",
        workspace=tmp_path,
        pinned=pinned,
        clock=FakeClock(),
        turn_queue_max=8,
    )


async def test_a_failing_receiver_is_logged_once_and_ends_the_connection(tmp_path, caplog):
    caplog.set_level(logging.ERROR)
    session = make_session(tmp_path)
    socket = WireSocket()
    search = SlowSearch()
    handler = StreamHandler(session, socket, guard=PathGuard([tmp_path]), search=search)
    outbox = session.attach()
    served = asyncio.ensure_future(handler.serve(outbox))
    await socket.incoming.put(
        frame("control.file.search", {"query_id": "q1", "query": "a"}, session.id)
    )
    await asyncio.wait_for(search.started.wait(), 5)
    await socket.incoming.put(RuntimeError("the wire broke"))
    await asyncio.wait_for(served, 5)  # returns: the connection ends cleanly
    assert served.exception() is None
    failures = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(failures) == 1, [r.getMessage() for r in failures]
    assert failures[0].exc_info and "the wire broke" in str(failures[0].exc_info[1])
    assert session.id in failures[0].getMessage()
    assert search.cancelled.is_set()  # the socket's search ended with it
    assert not handler.tasks.running and len(handler.tasks) == 0


async def test_cancelling_the_connection_passes_through_and_leaves_nothing(tmp_path, caplog):
    caplog.set_level(logging.ERROR)
    session = make_session(tmp_path)
    socket = WireSocket()
    search = SlowSearch()
    handler = StreamHandler(session, socket, guard=PathGuard([tmp_path]), search=search)
    served = asyncio.ensure_future(handler.serve(session.attach()))
    await socket.incoming.put(
        frame("control.file.search", {"query_id": "q1", "query": "a"}, session.id)
    )
    await asyncio.wait_for(search.started.wait(), 5)
    served.cancel()
    with pytest.raises(asyncio.CancelledError):
        await served
    assert search.cancelled.is_set()
    assert len(handler.tasks) == 0
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
