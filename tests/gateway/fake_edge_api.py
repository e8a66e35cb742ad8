"""A fake Edge API on loopback (aiohttp.web), for the gateway's master connection.

It holds just what the tests steer: which user tokens are valid, which sessions exist, and
for each edge WebSocket connection a script of what to send before closing. Every request is
recorded, so a test asserts on the calls the real `EdgeClient` / `SessionLink` made.
"""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

from tests.support import free_port

SECRET = "fake-edge-secret-0123456789abcdef"


@dataclass
class Connection:
    """One accepted edge socket: its query, and what arrived on it."""

    ticket: str
    last_message_id: str | None
    received: list[str] = field(default_factory=list)


@dataclass
class FakeEdgeApi:
    token_ttl: int = 900
    calls: list[tuple[str, str, str | None]] = field(default_factory=list)  # method, path, auth
    valid_tokens: set[str] = field(default_factory=set)
    sessions: set[str] = field(default_factory=set)
    tickets: set[str] = field(default_factory=set)
    # per connection, in order: texts to send, then close with this code (None: stay open)
    scripts: list[tuple[list[str], int | None]] = field(default_factory=list)
    connections: list[Connection] = field(default_factory=list)
    sockets: list[web.WebSocketResponse] = field(default_factory=list)
    error_for: dict[str, tuple[int, Any]] = field(default_factory=dict)  # path → reply
    _counter: Any = field(default_factory=lambda: itertools.count(1))
    url: str = ""
    _runner: web.AppRunner | None = None

    async def start(self) -> FakeEdgeApi:
        app = web.Application()
        app.router.add_post("/v1/edge/auth/token", self._token)
        app.router.add_get("/v1/edge/nodes", self._nodes)
        app.router.add_post("/v1/edge/sessions/{sid}/tickets", self._ticket)
        app.router.add_delete("/v1/edge/sessions/{sid}", self._end)
        app.router.add_get("/v1/edge/ws/stream", self._stream)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        port = free_port()
        await web.TCPSite(self._runner, "127.0.0.1", port).start()
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def close(self) -> None:
        for ws in self.sockets:
            await ws.close()
        if self._runner is not None:
            await self._runner.cleanup()

    def issue_ticket(self) -> str:
        ticket = f"ticket-{next(self._counter)}"
        self.tickets.add(ticket)
        return ticket

    def _record(self, request: web.Request) -> str | None:
        auth = request.headers.get("Authorization")
        self.calls.append((request.method, request.path, auth))
        return auth

    def _user(self, request: web.Request) -> web.Response | None:
        auth = self._record(request)
        if request.path in self.error_for:
            status, body = self.error_for[request.path]
            return web.json_response(body, status=status)
        token = (auth or "").removeprefix("Bearer ")
        if token not in self.valid_tokens:
            body = {"error_code": "INVALID_TOKEN", "message": "the token is not valid"}
            return web.json_response(body, status=401)
        return None

    async def _token(self, request: web.Request) -> web.Response:
        auth = self._record(request)
        if auth != f"Bearer {SECRET}":
            body = {"error_code": "INVALID_TOKEN", "message": "bad edge credential"}
            return web.json_response(body, status=401)
        body = await request.json()
        token = f"user-token-{next(self._counter)}-{body['subject']}"
        self.valid_tokens.add(token)
        return web.json_response(
            {"access_token": token, "token_type": "Bearer", "expires_in": self.token_ttl}
        )

    async def _nodes(self, request: web.Request) -> web.Response:
        refused = self._user(request)
        if refused is not None:
            return refused
        node = {  # as docs/edge-api.md's EP-E1 example (rawp.rest.NodeInfo)
            "node_id": "n1", "device_name": "box", "status": "online",
            "last_seen": "2026-12-01T09:30:00.000Z", "active_sessions_count": 0,
            "config_versions": {"limits": 1, "capabilities": 1},
        }  # fmt: skip
        return web.json_response({"nodes": [node]})

    async def _ticket(self, request: web.Request) -> web.Response:
        refused = self._user(request)
        if refused is not None:
            return refused
        sid = request.match_info["sid"]
        if sid not in self.sessions:
            body = {"error_code": "SESSION_NOT_FOUND", "message": "no such session"}
            return web.json_response(body, status=404)
        return web.json_response(
            {"session_id": sid, "edge_ws_ticket": self.issue_ticket(), "ticket_expires_in": 60},
            status=201,
        )

    async def _end(self, request: web.Request) -> web.Response:
        refused = self._user(request)
        if refused is not None:
            return refused
        sid = request.match_info["sid"]
        if sid not in self.sessions:
            body = {"error_code": "SESSION_NOT_FOUND", "message": "no such session"}
            return web.json_response(body, status=404)
        self.sessions.discard(sid)
        return web.Response(status=204)

    async def _stream(self, request: web.Request) -> web.StreamResponse:
        self._record(request)
        ticket = request.query.get("ticket", "")
        if ticket not in self.tickets or request.query.get("session_id") not in self.sessions:
            body = {"error_code": "INVALID_TICKET", "message": "no such ticket"}
            return web.json_response(body, status=401)
        self.tickets.discard(ticket)  # single use
        ws = web.WebSocketResponse(protocols=("rawp-dps-1.0",))
        await ws.prepare(request)
        self.sockets.append(ws)
        connection = Connection(ticket, request.query.get("last_message_id"))
        self.connections.append(connection)
        texts, close_code = self.scripts.pop(0) if self.scripts else ([], None)
        for text in texts:
            await ws.send_str(text)
        if close_code is not None:
            await ws.close(code=close_code)
            return ws
        async for message in ws:
            if message.type == WSMsgType.TEXT:
                connection.received.append(message.data)
        return ws


async def wait_for(predicate) -> None:
    """Until `predicate()` holds (events on loopback, not time, are what the tests wait for);
    the bound only turns a hang into a failure."""
    deadline = asyncio.get_running_loop().time() + 10.0
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("the condition never held")
        await asyncio.sleep(0.01)
