"""The edge of the fault trials: one user's WebSocket to a session that comes back after any
drop, and that writes down everything it received, socket by socket.

Its cursor rule (the lead's, issue 14): `last_message_id` is the last frame received that came
from the client — any frame except `session.history`, `node.*` and `session.error`, which the
master makes itself; a frame it had received before does not move the cursor back. After a
drop the edge asks for a fresh single-use ticket (A-22) at the first replica in its list that
answers, and reconnects there with that cursor, retrying until a deadline: a master being
restarted refuses connections for a while, and that is the point.

Each socket keeps its own log, so "no message_id twice on one socket" is checked per socket,
and "nothing lost, order kept" over everything the edge received during a turn.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import aiohttp
import orjson
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from tests.edge.stack import SUBPROTOCOLS, Edge, frame

MASTER_MADE = ("session.history", "session.error")


def from_client(received: dict) -> bool:
    kind = received.get("type", "")
    return kind not in MASTER_MADE and not kind.startswith("node.")


@dataclass
class SocketLog:
    """One WebSocket's life: where it went and every frame it received, in order."""

    url: str
    since: str | None  # the last_message_id it was opened with
    frames: list[dict] = field(default_factory=list)


class RecordingEdge:
    def __init__(self, http: aiohttp.ClientSession, token: str, session_id: str) -> None:
        self.http = http
        self.token = token
        self.session_id = session_id
        self.logs: list[SocketLog] = []
        self.cursor: str | None = None
        self.ws: ClientConnection | None = None
        self.via: dict[str, str] = {}  # REST URL -> the URL its WebSockets go to (a proxy)
        self._sockets: list[ClientConnection] = []
        self._received: set[str] = set()  # every message_id received on any socket

    def rest(self, url: str) -> Edge:
        return Edge(url, self.token, self.http)

    async def connect(self, urls: Callable[[], list[str]], limit: float) -> SocketLog:
        """A new socket with a fresh ticket from the first of `urls()` that gives one, and
        the cursor; tried again every 50 ms (a master restarting) until `limit` seconds."""
        deadline = time.monotonic() + limit
        last: object = None
        while True:
            for url in urls():
                try:
                    status, body = await asyncio.wait_for(
                        self.rest(url).call("POST", f"/v1/edge/sessions/{self.session_id}/tickets"),
                        5,
                    )
                    if status != 201:
                        last = (url, status, body)
                        continue
                    ws = await asyncio.wait_for(self._open(url, body["edge_ws_ticket"]), 5)
                except (aiohttp.ClientError, OSError, TimeoutError, InvalidHandshake) as exc:
                    last = (url, repr(exc))
                    continue
                log = SocketLog(url, self.cursor)
                self.logs.append(log)
                self.ws = ws
                return log
            if time.monotonic() > deadline:
                raise TimeoutError(f"edge could not reconnect within {limit}s; last: {last}")
            await asyncio.sleep(0.05)  # a retry interval, not a wait for something to happen

    async def _open(self, url: str, ticket: str) -> ClientConnection:
        ws_url = self.via.get(url, url).replace("http://", "ws://") + (
            f"/v1/edge/ws/stream?ticket={ticket}&session_id={self.session_id}"
        )
        if self.cursor:
            ws_url += f"&last_message_id={self.cursor}"
        ws = await connect(ws_url, subprotocols=SUBPROTOCOLS, max_size=None, open_timeout=5)
        self._sockets.append(ws)
        return ws

    async def send(self, text: str) -> None:
        assert self.ws is not None, "no socket"
        await self.ws.send(text)

    async def prompt(self, prompt_text: str, message_id: str | None = None) -> str:
        """Sends a prompt on the current socket; its message_id."""
        extra = {"message_id": message_id} if message_id else {}
        text = frame(
            "control.prompt.request", {"prompt_text": prompt_text}, self.session_id, **extra
        )
        await self.send(text)
        return orjson.loads(text)["message_id"]

    async def follow(
        self,
        done: Callable[[dict], bool],
        urls: Callable[[], list[str]],
        limit: float,
        on_frame: Callable[[dict], Awaitable[None]] | None = None,
    ) -> None:
        """Reads (reconnecting after every drop) until a frame satisfies `done`; every frame
        is logged and passed to `on_frame` first. Fails after `limit` seconds."""
        async with asyncio.timeout(limit):
            while True:
                if self.ws is None:
                    await self.connect(urls, limit)
                try:
                    raw = await self.ws.recv()
                except ConnectionClosed:
                    self.ws = None
                    continue
                received = orjson.loads(raw)
                self.logs[-1].frames.append(received)
                # A frame received before (a repeat, counted against the master) does not
                # move the cursor back.
                if from_client(received) and received["message_id"] not in self._received:
                    self.cursor = received["message_id"]
                self._received.add(received["message_id"])
                if on_frame is not None:
                    await on_frame(received)
                if done(received):
                    return

    def retire(self) -> None:
        """Leaves the current socket (its far end may be gone: no closing handshake is
        waited for); the next read or prompt opens a new one from the cursor."""
        if self.ws is not None:
            self.ws.transport.abort()
            self.ws = None

    async def close(self) -> None:
        for ws in self._sockets:
            await ws.close()
