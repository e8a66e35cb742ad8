"""A fake local client HTTP server for the master's outbound calls (a fake at the wire).

It checks the Bearer token on every call, rotates its tokens on `POST /v1/auth/refresh`,
answers `POST /v1/session/init`, and records what it saw.
"""

from __future__ import annotations

import asyncio

from aiohttp import web

from tests.support import free_port


class FakeClient:
    def __init__(self) -> None:
        self.valid_access = {"fresh-access-1"}  # "client-access" from pairing is already stale
        self.refresh_token = "client-refresh"
        self.generation = 1
        self.seen: list[tuple[str, str]] = []  # (path, token or refresh token)
        self.refusing_refresh = False
        self.refresh_delay = 0.0
        self.warning: str | None = None
        self.forget_after_refresh = False
        self.init_status = 201
        self.init_bodies: list[dict] = []

    async def health(self, request: web.Request) -> web.Response:
        token = request.headers.get("Authorization", "").removeprefix("Bearer ")
        self.seen.append((request.path, token))
        if token not in self.valid_access:
            return web.json_response(
                {"error_code": "TOKEN_EXPIRED", "message": "expired"}, status=401
            )
        headers = {"Warning": self.warning} if self.warning else {}
        return web.json_response({"status": "online"}, headers=headers)

    async def refresh(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.seen.append((request.path, body.get("refresh_token")))
        await asyncio.sleep(self.refresh_delay)
        if self.refusing_refresh or body.get("refresh_token") != self.refresh_token:
            return web.json_response({"error_code": "INVALID_TOKEN", "message": "no"}, status=401)
        access = f"fresh-access-{self.generation}"
        self.generation += 1
        self.valid_access = set() if self.forget_after_refresh else {access}
        self.refresh_token = f"client-refresh-{self.generation}"
        return web.json_response(
            {"access_token": access, "refresh_token": self.refresh_token, "expires_in": 3600}
        )

    async def session_init(self, request: web.Request) -> web.Response:
        token = request.headers.get("Authorization", "").removeprefix("Bearer ")
        self.seen.append((request.path, token))
        if token not in self.valid_access:
            return web.json_response({"error_code": "TOKEN_EXPIRED", "message": "x"}, status=401)
        body = await request.json()
        self.init_bodies.append(body)
        if self.init_status >= 400:
            return web.json_response(
                {"error_code": "SESSION_CONFLICT", "message": "no"}, status=self.init_status
            )
        status = 200 if body.get("reattach") else self.init_status
        return web.json_response(
            {"session_id": body["session_id"], "status": "INIT", "ticket_expires_in": 60},
            status=status,
        )

    async def serve(self):
        app = web.Application()
        app.router.add_get("/v1/health", self.health)
        app.router.add_post("/v1/auth/refresh", self.refresh)
        app.router.add_post("/v1/session/init", self.session_init)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        port = free_port()
        await web.TCPSite(self._runner, "127.0.0.1", port).start()
        self.address = f"http://127.0.0.1:{port}"
        return self

    async def close(self) -> None:
        await self._runner.cleanup()
