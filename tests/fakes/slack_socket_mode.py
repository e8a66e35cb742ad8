"""The fake Socket Mode websocket that `apps.connections.open` hands out.

Protocol (api.slack.com/apis/socket-mode): the client connects to the URL with its one-time
`ticket`; Slack sends `{"type": "hello", ...}`; then envelopes
`{"envelope_id", "type": "events_api" | "interactive" | "slash_commands", "payload", ...}`
which the app must acknowledge within 3 s by sending `{"envelope_id": ..., "payload"?: ...}`.
`{"type": "disconnect", "reason": ...}` asks the client to reconnect. Every frame the client
sends is recorded as method "WS", path "ack" (with an envelope_id) or "frame".
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import Callable
from typing import Any

from aiohttp import WSMsgType, web

from .calls import Call, CallLog

ENVELOPE_TYPES = ("events_api", "interactive", "slash_commands")


class SlackSocketMode:
    def __init__(self, log: CallLog, tickets: set[str], app_id: Callable[[], str]) -> None:
        self.log = log
        self.tickets = tickets  # shared with the Web API, which issues them
        self.app_id = app_id
        self.connections: list[web.WebSocketResponse] = []
        self.closing = False  # set by close_all: a client reconnecting meanwhile is turned away

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if self.closing:  # else its handler would hold the fake's cleanup for 60 s
            return web.Response(status=503, text="the fake Slack is closing")
        ticket = request.query.get("ticket", "")
        if ticket not in self.tickets:
            self.log.record(Call("WS", "CONNECT", None, query=dict(request.query), status=401))
            return web.Response(status=401, text="invalid ticket")
        self.tickets.discard(ticket)  # tickets are single-use, as on Slack
        self.log.record(Call("WS", "CONNECT", None, query=dict(request.query)))
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        self.connections.append(ws)
        hello = {
            "type": "hello",
            "num_connections": len(self.connections),
            "debug_info": {"host": "fake-slack", "approximate_connection_time": 3600},
            "connection_info": {"app_id": self.app_id()},
        }
        await ws.send_str(json.dumps(hello))
        try:
            async for message in ws:
                if message.type == WSMsgType.TEXT:
                    self._receive(message.data)
                elif message.type == WSMsgType.ERROR:
                    break
        finally:
            self.connections.remove(ws)
        return ws

    def _receive(self, text: str) -> None:
        try:
            frame = json.loads(text)
        except ValueError:
            self.log.record(Call("WS", "frame", text, status=400))
            return
        kind = "ack" if isinstance(frame, dict) and "envelope_id" in frame else "frame"
        self.log.record(Call("WS", kind, frame))

    async def push(
        self, envelope_type: str, payload: dict[str, Any], *, accepts_response_payload=None
    ) -> str:
        """Send one envelope to the newest connection; returns its envelope_id."""
        if envelope_type not in ENVELOPE_TYPES:
            raise ValueError(f"envelope type must be one of {ENVELOPE_TYPES}")
        if accepts_response_payload is None:  # Slack lets commands/interactions answer in the ack
            accepts_response_payload = envelope_type != "events_api"
        envelope_id = secrets.token_hex(16)
        envelope = {
            "envelope_id": envelope_id,
            "type": envelope_type,
            "payload": payload,
            "accepts_response_payload": accepts_response_payload,
            "retry_attempt": 0,
            "retry_reason": "",
        }
        live = [ws for ws in self.connections if not ws.closed]
        if not live:
            raise RuntimeError("no Socket Mode client is connected to the fake Slack")
        # Slack delivers each envelope over one of the app's connections; the newest here, so
        # an envelope pushed after a reconnect does not go to the connection being replaced.
        await live[-1].send_str(json.dumps(envelope))
        return envelope_id

    async def disconnect(self, reason: str = "refresh_requested") -> None:
        """Ask connected clients to reconnect, as Slack does every few hours."""
        for ws in list(self.connections):
            await ws.send_str(json.dumps({"type": "disconnect", "reason": reason}))

    async def wait_for_connection(self, timeout: float = 10.0) -> None:  # noqa: ASYNC109
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not self.connections:
            if loop.time() >= deadline:
                raise TimeoutError(f"no Socket Mode client connected within {timeout}s")
            await asyncio.sleep(0.01)

    async def close_all(self) -> None:
        self.closing = True
        for ws in list(self.connections):
            await ws.close()
