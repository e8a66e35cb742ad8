"""A fake master at the wire (RAWP §3.3–§3.4, §4.1): an aiohttp server that records what the
client sends and checks it as the real master would — fields, versions, bearer tokens."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from rawp.clock import new_id, new_secret
from rawp.tokens import SigningKey, bearer, verify
from tests.support import free_port


@dataclass
class FakeMaster:
    key: SigningKey = field(default_factory=SigningKey.generate)
    pairing_token: str = field(default_factory=lambda: new_secret(32))
    node_id: str = field(default_factory=new_id)
    port: int = field(default_factory=free_port)
    received: list[tuple[str, str, Any, str | None]] = field(default_factory=list)
    refresh_token: str = ""
    # Scripted refusals, consumed in order: (path, status, body).
    refusals: list[tuple[str, int, dict]] = field(default_factory=list)
    warning: str | None = None
    sign_with: SigningKey | None = None  # a wrong key, to test the client's verification
    pair_body: dict | None = None
    _runner: web.AppRunner | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pairing_url(self) -> str:
        return f"{self.base}/v1/auth/pair?token={self.pairing_token}"

    def tokens(self) -> dict[str, Any]:
        self.refresh_token = new_secret()
        signer = self.sign_with or self.key
        return {
            "access_token": signer.sign({"sub": self.node_id}, 3600, kind="node"),
            "refresh_token": self.refresh_token,
            "expires_in": 3600,
            "server_credentials": self.key.public_jwk(),
            "node_id": self.node_id,
        }

    def puts(self, scope: str) -> list[dict]:
        return [b for m, p, b, _ in self.received if m == "PUT" and p.endswith(scope)]

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/v1/auth/pair", self._pair)
        app.router.add_post("/v1/auth/refresh", self._refresh)
        app.router.add_put("/v1/nodes/config/{scope}", self._put)
        app.router.add_delete("/v1/nodes/self", self._unpair)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def _refused(self, path: str) -> web.Response | None:
        for i, (where, status, body) in enumerate(self.refusals):
            if path.endswith(where):
                del self.refusals[i]
                return web.json_response(body, status=status)
        return None

    async def _pair(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.received.append(("POST", request.path, body, None))
        self.pair_body = body
        if body.get("pairing_token") != self.pairing_token:
            return web.json_response({"error_code": "INVALID_PAIRING_TOKEN", "message": "no"}, 401)
        creds = body.get("client_credentials") or {}
        missing = [k for k in ("access_token", "refresh_token", "expires_in") if k not in creds]
        missing += [k for k in ("client_address", "device_name") if not body.get(k)]
        if missing:
            return web.json_response({"error_code": "BAD_REQUEST", "message": str(missing)}, 400)
        return web.json_response(self.tokens())

    async def _refresh(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.received.append(("POST", request.path, body, None))
        if body.get("refresh_token") != self.refresh_token:
            return web.json_response({"error_code": "INVALID_REFRESH_TOKEN", "message": "no"}, 401)
        return web.json_response(self.tokens())

    async def _unpair(self, request: web.Request) -> web.Response:
        token = request.headers.get("Authorization")
        self.received.append(("DELETE", request.path, None, token))
        try:
            verify(bearer(token), self.key, kind="node")
        except Exception:
            return web.json_response({"error_code": "INVALID_TOKEN", "message": "no"}, 401)
        return web.Response(status=204)

    async def _put(self, request: web.Request) -> web.Response:
        body = await request.json()
        token = request.headers.get("Authorization")
        self.received.append(("PUT", request.path, body, token))
        try:
            verify(bearer(token), self.key, kind="node")
        except Exception:
            return web.json_response({"error_code": "INVALID_TOKEN", "message": "no"}, 401)
        refused = self._refused(request.path)
        if refused is not None:
            return refused
        scope = request.match_info["scope"]
        fields = {"limits": "limits", "capabilities": "capabilities"}
        if scope not in fields or fields[scope] not in body or "effective_at" not in body:
            return web.json_response({"error_code": "CONFIG_FIELD_MISSING", "message": "x"}, 400)
        headers = {"Warning": self.warning} if self.warning else {}
        return web.json_response(
            {
                "config_version": body["config_version"],
                "accepted_at": "2026-01-01T00:00:00Z",
                "active_sessions_affected": 0,
            },
            headers=headers,
        )
