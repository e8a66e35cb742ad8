"""A fake local client at the wire (aiohttp on loopback): the HTTP calls the master makes for
edge sessions and the data-plane WebSocket it opens. It records what the master sends and
lets the test push frames as the client would, byte for byte."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

from rawp.frames import dump_frame, make_frame
from tests.support import free_port


@dataclass
class FakeSession:
    session_id: str
    ticket: str | None
    sockets: list[web.WebSocketResponse] = field(default_factory=list)
    received: list[str] = field(default_factory=list)
    got: asyncio.Event = field(default_factory=asyncio.Event)


class FakeClient:
    def __init__(self, default_workspace: str | None = None) -> None:
        self.default_workspace = default_workspace
        self.sessions: dict[str, FakeSession] = {}
        self.calls: list[tuple[str, str]] = []  # (method, path)
        self.init_bodies: list[dict[str, Any]] = []
        self.init_refusal: tuple[int, str] | None = None
        # Issue 30 §2: what `GET /v1/agent-sessions` answers (status, body).
        self.agent_sessions: tuple[int, Any] = (200, {"conversations": []})
        # Called with the session id when a reattach `session/init` arrives, before it is
        # answered: a test's way to make something happen at that moment.
        self.on_reattach: Callable[[str], Awaitable[None]] | None = None
        self.port = free_port()
        self.address = f"http://127.0.0.1:{self.port}"
        self._runner: web.AppRunner | None = None

    async def serve(self) -> FakeClient:
        app = web.Application()
        app.router.add_get("/v1/health", self._health)
        app.router.add_get("/v1/agents", self._agents)
        app.router.add_post("/v1/session/init", self._init)
        app.router.add_get("/v1/agent-sessions", self._agent_sessions)
        app.router.add_delete("/v1/session/{session_id}", self._delete)
        app.router.add_get("/v1/ws/stream", self._stream)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()
        return self

    async def close(self) -> None:
        for session in self.sessions.values():
            for ws in session.sockets:
                with contextlib.suppress(Exception):
                    await ws.close()
        if self._runner is not None:
            await self._runner.cleanup()

    def _note(self, request: web.Request) -> None:
        self.calls.append((request.method, request.path))

    async def _health(self, request: web.Request) -> web.Response:
        self._note(request)
        return web.json_response({"status": "online", "uptime": 42, "active_sessions": 0})

    async def _agents(self, request: web.Request) -> web.Response:
        self._note(request)
        body: dict[str, Any] = {"agents": [{"id": "demo", "name": "demo", "is_active": True}]}
        if self.default_workspace:
            body["default_workspace_path"] = self.default_workspace
        return web.json_response(body)

    async def _agent_sessions(self, request: web.Request) -> web.Response:
        self.calls.append((request.method, request.path_qs))
        status, body = self.agent_sessions
        return web.json_response(body, status=status)

    async def _init(self, request: web.Request) -> web.Response:
        self._note(request)
        body = await request.json()
        self.init_bodies.append(body)
        if self.init_refusal is not None:
            status, code = self.init_refusal
            return web.json_response({"error_code": code, "message": "no"}, status=status)
        sid = body["session_id"]
        if body.get("reattach"):
            if self.on_reattach is not None:
                await self.on_reattach(sid)
            if sid not in self.sessions:
                return web.json_response({"error_code": "SESSION_NOT_FOUND", "message": "x"}, 404)
            self.sessions[sid].ticket = body["ticket"]
            return web.json_response({"session_id": sid, "status": "DETACHED"}, status=200)
        self.sessions[sid] = FakeSession(sid, body["ticket"])
        return web.json_response({"session_id": sid, "status": "INIT"}, status=201)

    async def _delete(self, request: web.Request) -> web.Response:
        self._note(request)
        session = self.sessions.pop(request.match_info["session_id"], None)
        if session is None:
            return web.json_response({"error_code": "SESSION_NOT_FOUND", "message": "x"}, 404)
        for ws in session.sockets:
            await ws.close()
        return web.Response(status=204)

    async def _stream(self, request: web.Request) -> web.StreamResponse:
        session = self.sessions.get(request.query.get("session_id", ""))
        if session is None or request.query.get("ticket") != session.ticket:
            return web.json_response({"error_code": "INVALID_TICKET", "message": "x"}, status=401)
        session.ticket = None
        ws = web.WebSocketResponse(protocols=("rawp-dps-1.0", "rawp-1.0"))
        await ws.prepare(request)
        session.sockets.append(ws)
        for type, payload in (
            ("session.capabilities", {"protocol": "rawp-dps-1.0"}),
            ("tool.catalog.publish", {"tools": []}),
        ):
            await ws.send_str(dump_frame(make_frame(type, payload, session_id=session.session_id)))
        async for message in ws:
            if message.type == WSMsgType.TEXT:
                session.received.append(message.data)
                session.got.set()
        return ws

    async def push(self, session_id: str, text: str) -> None:
        """Send `text` to the master as this session's client, exactly as given."""
        await self.sessions[session_id].sockets[-1].send_str(text)

    async def drop(self, session_id: str) -> None:
        """Close the session's socket from the client's side, as a blip would."""
        await self.sessions[session_id].sockets[-1].close()

    async def wait_received(self, session_id: str, count: int) -> list[str]:
        session = self.sessions[session_id]
        async with asyncio.timeout(10):
            while len(session.received) < count:
                session.got.clear()
                await session.got.wait()
        return session.received
