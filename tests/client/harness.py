"""Drive the local client the way the master does: real HTTP (aiohttp), a real WebSocket
(`websockets`), the app served as `rawp client` serves it (client/server.py: hypercorn) on a
loopback port, agents as child processes."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import psutil
from websockets.asyncio.client import ClientConnection, connect

from client.app import Services, create_app
from client.server import serve_client
from client.settings import ClientSettings
from rawp.clock import Clock, FakeClock, new_id, new_secret
from rawp.config import DEFAULT_LIMITS, Limits
from tests.support import free_port

SUBPROTOCOLS = ["rawp-dps-1.0", "rawp-1.0"]


@dataclass
class RunningClient:
    base: str
    services: Services
    clock: Clock
    http: aiohttp.ClientSession
    token: str
    workspace: Path
    sockets: list[ClientConnection] = field(default_factory=list)

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    async def request(
        self, method: str, path: str, body: Any = None, *, headers=None, data: bytes | None = None
    ) -> tuple[int, Any]:
        kwargs: dict[str, Any] = {"headers": self.auth if headers is None else headers}
        if data is not None:
            kwargs["data"] = data
        elif body is not None:
            kwargs["json"] = body
        async with self.http.request(method, self.base + path, **kwargs) as resp:
            raw = await resp.read()
            return resp.status, (orjson.loads(raw) if raw else None)

    async def init(
        self,
        *,
        session_id: str | None = None,
        ticket: str | None = None,
        agent: str = "demo",
        workspace: Path | None = None,
        **extra,
    ) -> dict:
        body = {
            "session_id": session_id or new_id(),
            "ticket": ticket or new_secret(),
            "agent_name": agent,
            "workspace_path": str(workspace or self.workspace),
            **extra,
        }
        status, answer = await self.request("POST", "/v1/session/init", body)
        return {
            "status": status,
            "body": answer,
            "ticket": body["ticket"],
            "session_id": body["session_id"],
        }

    async def connect(
        self, session_id: str, ticket: str, subprotocols: list[str] | None = None
    ) -> ClientConnection:
        url = self.base.replace("http://", "ws://") + (
            f"/v1/ws/stream?ticket={ticket}&session_id={session_id}"
        )
        ws = await connect(url, subprotocols=subprotocols or SUBPROTOCOLS, max_size=None)
        self.sockets.append(ws)
        return ws

    async def start_session(self, **kwargs) -> tuple[str, ClientConnection]:
        made = await self.init(**kwargs)
        assert made["status"] == 201, made
        ws = await self.connect(made["session_id"], made["ticket"])
        return made["session_id"], ws


def frame(type: str, payload: dict, session_id: str | None = None, **extra) -> str:
    from rawp.frames import dump_frame, make_frame

    return dump_frame(make_frame(type, payload, session_id=session_id, **extra))


async def recv(ws: ClientConnection, wait: float = 20) -> dict:
    return orjson.loads(await asyncio.wait_for(ws.recv(), wait))


async def recv_until(ws: ClientConnection, type: str, wait: float = 30) -> list[dict]:
    """Every frame up to and including the first of `type`."""
    seen = []
    while True:
        seen.append(await recv(ws, wait))
        if seen[-1]["type"] == type:
            return seen


@contextlib.asynccontextmanager
async def running_client(
    tmp_path: Path,
    *,
    clock: Clock | None = None,
    limits: Limits | None = None,
    agents_file: Path | None = None,
    kill_grace: float = 0.5,
    search: Any = None,
    **settings_kw,
):
    # Tests make many calls at one FakeClock instant; the rate-limit test pins its own.
    limits = limits or DEFAULT_LIMITS.model_copy(update={"rate_limit": 10_000})
    root = tmp_path / "root"
    workspace = root / "ws"
    workspace.mkdir(parents=True, exist_ok=True)
    port = free_port()
    settings = ClientSettings(
        state_dir=tmp_path / "state",
        allowed_roots=[root],
        port=port,
        dev=True,
        agents_file=agents_file,
        rate_limit=limits.rate_limit,
        max_frame_size=limits.max_frame_size,
        reattach_window=limits.reattach_window,
        max_buffer_size=limits.max_buffer_size,
        buffer_policy=limits.buffer_overflow_policy,
        kill_grace=kill_grace,
        sweep_interval=0.05,
        **settings_kw,
    )
    clock = clock or FakeClock()
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    app = create_app(settings, clock, search=search)
    stop = asyncio.Event()
    server = asyncio.create_task(serve_client(app, "127.0.0.1", port, stop))
    services: Services = app.config["client_services"]
    base = f"http://127.0.0.1:{port}"
    async with aiohttp.ClientSession() as http:
        for _ in range(200):
            with contextlib.suppress(aiohttp.ClientError):
                async with http.get(base + "/v1/health"):
                    break
            await asyncio.sleep(0.02)
        running = RunningClient(
            base, services, clock, http, services.auth.issue().access_token, workspace
        )
        try:
            yield running
        finally:
            for ws in running.sockets:
                with contextlib.suppress(Exception):
                    await ws.close()
            stop.set()
            await asyncio.wait_for(server, 30)
        # Shutting the client down ends every agent it started, and reaps it (no zombie).
        left = [p for p in psutil.Process().children(recursive=True) if p.pid not in before]
        assert not left, f"processes left behind: {[p.cmdline() for p in left]}"
