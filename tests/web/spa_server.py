"""A stand-in for the web edge's server, for the browser tests of the SPA (issue 21).

It serves the real files of adapters/web/static/ and answers the contract's /api routes with
fixed data; on the session WebSocket it sends exactly the DPS frames a test hands it, when the
test hands them (so every pause is the test's), and records what the browser sends. It runs
in a thread with its own event loop because Playwright's sync API owns the test's thread.

With `replay` on it also plays the master's and the gateway's part in a reload (issue 28 §1):
a connect with `last_message_id` gets `session.history` and the frames sent after that cursor
(all of them for a cursor it does not know), and `/api/sessions/{id}/prompts` answers the
prompts the browser sent, as the web edge keeps them (gateway.storage.web_prompts).
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from aiohttp import WSMsgType, web

STATIC = Path(__file__).resolve().parents[2] / "adapters" / "web" / "static"
SESSION_ID = "3f1c2a9e-7b4d-4e21-9a57-1c0d2b3e4f50"
NEW_SESSION_ID = "7a2b3c4d-0000-4000-8000-00000000000f"  # what a resume or fork starts
NODE_ID = "5d2c0000-0000-4000-8000-000000000001"
# For page.evaluate: resolves once the browser has drawn two more frames, so everything queued
# before it (handled frames, layout, observers) has run.
FRAME = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"


def dps(type_: str, payload: dict, turn_id: str | None = None, **extra) -> dict:
    """One agent-side DPS frame (docs/protocol.md, "Envelope")."""
    frame = {
        "v": "rawp-dps-1.0",
        "type": type_,
        "message_id": str(uuid.uuid4()),
        "timestamp": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
        "session_id": SESSION_ID,
        "payload": payload,
        **extra,
    }
    if turn_id:
        frame["turn_id"] = turn_id
    return frame


class SpaServer:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, name="spa-server", daemon=True)
        self.ready = threading.Event()
        self.reset()

    # --- what a test controls --------------------------------------------------------------

    def reset(self) -> None:
        with self.lock:
            self.received: list[dict] = []
            self.connects: list[dict] = []  # the query of each WebSocket connect
            self.created: list[dict] = []  # POST /api/nodes/{id}/sessions bodies
            self.deleted: list[str] = []
        self.greeting: list[dict] = []  # frames sent on every new connection
        self.usage: list[dict] = USAGE
        self.replay = False
        self.sent: list[dict] = []  # every frame handed to `send`, for the replay
        self.other_prompts: list[dict] = []  # prompts "sent from another tab"
        self.signed_in = True
        self.ws: web.WebSocketResponse | None = None
        # Issue 30 (tests/web/test_session_extras.py): the session's worktree diff (None: it has
        # none), the answers to merge/discard by action, and the voice service.
        self.sessions: list[dict] = [SESSION]
        self.worktree: dict | None = None
        self.worktree_answers: dict[str, tuple[int, dict]] = {}
        self.worktree_posts: list[str] = []
        self.voice: str | None = None  # the transcript; None: no service configured
        self.clips: list[tuple[str, int]] = []  # (content type, size) of each clip posted

    def send(self, *frames: dict) -> None:
        """Send frames to the open session socket, in order, and wait until they are written."""
        self._call(self._send(frames))

    def drop(self, code: int = 1012) -> None:
        """Close the browser's socket as the web edge does when the master link drops."""
        self._call(self._drop(code))

    def wait_connects(self, count: int, timeout: float = 5.0) -> list[dict]:
        return self._wait(
            lambda: self.connects if len(self.connects) >= count else None,
            timeout,
            f"{count} WebSocket connects",
        )

    def wait_frame(self, type_: str, timeout: float = 5.0, **payload_match) -> dict:
        def found():
            for frame in self.received:
                if frame.get("type") == type_ and all(
                    frame.get("payload", {}).get(k) == v for k, v in payload_match.items()
                ):
                    return frame
            return None

        return self._wait(found, timeout, f"a {type_} frame from the browser")

    def sent_types(self) -> list[str]:
        with self.lock:
            return [f.get("type") for f in self.received]

    # --- plumbing --------------------------------------------------------------------------

    def _wait(self, probe, timeout: float, what: str):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                result = probe()
            if result:
                return result
            time.sleep(0.02)
        raise AssertionError(f"timed out waiting for {what}; got {self.sent_types()}")

    def _call(self, coro, timeout: float = 5.0):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    async def _send(self, frames) -> None:
        ws = self.ws
        assert ws is not None and not ws.closed, "no session socket open"
        for frame in frames:
            await ws.send_str(json.dumps(frame))
            self.sent.append(frame)

    async def _drop(self, code: int) -> None:
        if self.ws is not None:
            await self.ws.close(code=code, message=b"master link dropped")

    def start(self) -> SpaServer:
        self.thread.start()
        self.ready.wait(10)
        return self

    def stop(self) -> None:
        async def shutdown():
            await self.runner.cleanup()

        self._call(shutdown())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.runner = web.AppRunner(self._app())
        self.loop.run_until_complete(self.runner.setup())
        self.loop.run_until_complete(web.SockSite(self.runner, self.sock).start())
        self.ready.set()
        self.loop.run_forever()

    def _app(self) -> web.Application:
        app = web.Application()
        r = app.router
        r.add_get("/", self._index)
        r.add_static("/static/", STATIC, show_index=False)
        r.add_get("/api/me", self._me)
        r.add_get("/api/nodes", self._guard(lambda _: {"nodes": [NODE]}))
        r.add_get("/api/nodes/{node_id}/agents", self._guard(lambda _: {"agents": AGENTS}))
        r.add_get("/api/sessions", self._guard(lambda _: {"sessions": self.sessions}))
        r.add_get("/api/usage", self._guard(lambda _: {"days": self.usage}))
        r.add_post("/api/nodes/{node_id}/sessions", self._create)
        r.add_delete("/api/sessions/{session_id}", self._delete)
        r.add_post("/logout", self._logout)
        r.add_get("/api/sessions/{session_id}/stream", self._stream)
        r.add_get("/api/sessions/{session_id}/prompts", self._prompts)
        r.add_get("/api/sessions/{session_id}/worktree", self._worktree_diff)
        r.add_post("/api/sessions/{session_id}/worktree", self._worktree_act)
        r.add_get("/api/voice", self._guard(lambda _: {"configured": self.voice is not None}))
        r.add_get("/api/schedules", self._guard(lambda _: {"schedules": []}))
        r.add_post("/api/voice", self._transcribe)
        return app

    async def _worktree_diff(self, _request):
        if self.worktree is None:
            refusal = {"error_code": "NO_WORKTREE", "message": "the session has no worktree"}
            return web.json_response(refusal, status=404)
        return web.json_response(self.worktree)

    async def _worktree_act(self, request):
        action = (await request.json())["action"]
        with self.lock:
            self.worktree_posts.append(action)
        status, body = self.worktree_answers[action]
        return web.json_response(body, status=status)

    async def _transcribe(self, request):
        data = await request.read()
        with self.lock:
            self.clips.append((request.content_type, len(data)))
        if self.voice is None:
            refusal = {"error_code": "VOICE_NOT_CONFIGURED", "message": "no service"}
            return web.json_response(refusal, status=503)
        if self.voice.startswith("!"):  # the service failed: its words for the person
            refusal = {"error_code": "TRANSCRIPTION_FAILED", "message": self.voice[1:]}
            return web.json_response(refusal, status=502)
        return web.json_response({"text": self.voice})

    async def _index(self, _request):
        return web.FileResponse(STATIC / "index.html")

    def _guard(self, answer):
        async def handler(request):
            if not self.signed_in:
                return web.json_response(
                    {"error_code": "NOT_SIGNED_IN", "message": "sign in first"}, status=401
                )
            return web.json_response(answer(request))

        return handler

    async def _create(self, request):
        body = await request.json()
        with self.lock:
            self.created.append({"node_id": request.match_info["node_id"], **body})
        if body.get("agent_name") != "demo":
            return web.json_response(
                {"error_code": "AGENT_NOT_ALLOWED", "message": "no such agent"}, status=403
            )
        if body.get("resume"):  # issue 30 §2: a resume or fork starts a new session
            made = {**SESSION, "session_id": NEW_SESSION_ID}
            self.sessions = [made, *self.sessions]
            return web.json_response(made, status=201)
        return web.json_response({**SESSION, "edge_ws_ticket": None}, status=201)

    async def _delete(self, request):
        with self.lock:
            self.deleted.append(request.match_info["session_id"])
        return web.Response(status=204)

    async def _logout(self, _request):
        self.signed_in = False
        return web.Response(status=204)

    async def _me(self, request):
        return await self._guard(lambda _: {"subject": "console:local", "name": "owner"})(request)

    def _replayed(self, cursor: str | None) -> list[dict]:
        """The master's answer to a cursor (docs/edge-api.md, "Reconnecting"), in replay mode."""
        if not self.replay or not cursor:
            return []
        ids = [f["message_id"] for f in self.sent]
        after = self.sent[ids.index(cursor) + 1 :] if cursor in ids else list(self.sent)
        history = {"since_message_id": cursor, "replayed": len(after), "dropped": 0}
        return [dps("session.history", history), *after]

    async def _prompts(self, request):
        with self.lock:
            own = [f for f in self.received if f.get("type") == "control.prompt.request"]
            found = [
                {"message_id": f["message_id"], "text": f["payload"]["prompt_text"], "sent_at": 0}
                for f in own
            ]
            found += self.other_prompts
        return web.json_response({"prompts": found})

    async def _stream(self, request):
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        self.ws = ws
        for frame in self.greeting + self._replayed(request.query.get("last_message_id")):
            await ws.send_str(json.dumps(frame))
        with self.lock:  # recorded last: a test that saw the connect may send at once
            self.connects.append(dict(request.query))
        async for msg in ws:
            if msg.type == WSMsgType.TEXT:
                with self.lock:
                    self.received.append(json.loads(msg.data))
        return ws


NODE = {
    "node_id": NODE_ID,
    "device_name": "laptop",
    "status": "online",
    "last_seen": "2026-12-01T09:30:00.000Z",
    "capabilities": ["rawp_dps_1.0", "file_search_v1"],
    "active_sessions_count": 1,
    "config_versions": {"limits": 1, "capabilities": 1},
}
AGENTS = [{"name": "demo"}]
SESSION = {
    "session_id": SESSION_ID,
    "node_id": NODE_ID,
    "agent_name": "demo",
    "status": "RUNNING",
    "created_at": "2026-12-01T09:30:00.000Z",
    "last_activity_at": "2026-12-01T09:31:00.000Z",
    "pinned_config_versions": {"limits": 1, "capabilities": 1},
}
# Yesterday and today (UTC): the chart's slots are the 14 days up to today.
TODAY = datetime.now(UTC).date()
USAGE = [
    {
        "date": (TODAY - timedelta(days=1)).isoformat(),
        "node_id": NODE_ID,
        "node_name": "laptop",
        "input_tokens": 1200,
        "output_tokens": 300,
        "cost_usd": 0.012,
    },
    {
        "date": TODAY.isoformat(),
        "node_id": NODE_ID,
        "node_name": "laptop",
        "input_tokens": 800,
        "output_tokens": 200,
        "cost_usd": 0.008,
    },
]
