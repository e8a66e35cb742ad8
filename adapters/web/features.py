"""The web edge's share of issue 30 (docs/web.md, "Worktrees, resume and fork, voice,
schedules"): the JSON routes behind the app's worktree buttons, voice input and schedule panel.
Resume and fork are session starts (`resume`/`fork` in `POST /api/nodes/{id}/sessions`,
adapters.web.server), so they have no route here.

    GET    /api/sessions/{id}/worktree           the diff (the master's answer verbatim)
    POST   /api/sessions/{id}/worktree           {"action": "merge"|"discard"}
    GET    /api/voice                            {"configured": bool}
    POST   /api/voice                            an audio clip as the body → {"text": …}
    GET    /api/schedules                        {"schedules": [...]}
    POST   /api/schedules                        201 + the schedule
    POST   /api/schedules/{id}/pause|resume      200 + the schedule
    DELETE /api/schedules/{id}                   204

Rules:

1. Every call to the master is made as the cookie's subject (adapters.web.server rule 2), so
   the master's owner rules hold as they do in chat: only the session's owner diffs, merges or
   discards its worktree (another's is 404 SESSION_NOT_FOUND), only a schedule's owner lists,
   pauses or deletes it, and a schedule is made on the caller's own nodes only. A refusal keeps
   the master's status and `error_code` (MERGE_CONFLICT, NO_WORKTREE, INVALID_SCHEDULE, …).
2. The diff is a GET: reading it changes nothing, and the app asks for it when a session opens
   to learn whether the session has a worktree at all (404 NO_WORKTREE: no buttons). Merge and
   discard are POSTs, so the same-origin check of every change applies (adapters.web.auth
   rule 4). `diff` in the POST body is refused: one way to read it.
3. Voice goes through the chat's own transcription client (gateway.sessions.voice: the
   `RAWP_GATEWAY_TRANSCRIBE_URL` group of settings): the same service, model, key and timeout,
   the same size limit, the same words for the person. Without a service `GET /api/voice`
   says so and a clip is 503 VOICE_NOT_CONFIGURED with the chat's NOT_CONFIGURED sentence.
   The body is read up to the limit and no further (413 AUDIO_TOO_LARGE), and only an audio
   type is taken (415 NOT_AUDIO). The transcript is answered, not sent: the page shows it and
   sends it as the prompt over its session socket like any typed prompt (so it is kept for a
   reload too).
"""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web

from adapters.web.auth import WebUser
from gateway.edge_client import EdgeClient
from gateway.sessions.voice import (
    MAX_AUDIO_BYTES,
    NOT_CONFIGURED,
    Transcriber,
    VoiceError,
    is_audio,
)

ACTIONS = ("merge", "discard")
# The fields of a schedule the app may send; anything else is not passed on.
SCHEDULE_FIELDS = ("node_id", "agent_name", "workspace_path", "prompt", "schedule", "timezone")
CLIP_NAMES = {"audio/ogg": "voice.ogg", "audio/webm": "voice.webm", "video/webm": "voice.webm"}


def _error(status: int, code: str, message: str) -> web.Response:
    return web.json_response({"error_code": code, "message": message}, status=status)


def _json(body: Any, status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(body), status=status, content_type="application/json")


async def _object(request: web.Request) -> dict[str, Any] | None:
    try:
        body = await request.json(loads=orjson.loads)
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


class WebFeatures:
    """The routes above; `user_of(request)` is the signed-in user (the server's middleware)."""

    def __init__(self, edge: EdgeClient, transcriber: Transcriber, user_of) -> None:
        self.edge = edge
        self.transcriber = transcriber
        self.user_of = user_of

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_get("/api/sessions/{session_id}/worktree", self.worktree_diff)
        router.add_post("/api/sessions/{session_id}/worktree", self.worktree_act)
        router.add_get("/api/voice", self.voice_state)
        router.add_post("/api/voice", self.transcribe)
        router.add_get("/api/schedules", self.schedules)
        router.add_post("/api/schedules", self.create_schedule)
        router.add_post("/api/schedules/{schedule_id}/{verb:pause|resume}", self.pause_schedule)
        router.add_delete("/api/schedules/{schedule_id}", self.delete_schedule)

    def _subject(self, request: web.Request) -> str:
        user: WebUser = self.user_of(request)
        return user.subject

    # --- worktrees (issue 30 §3) ---------------------------------------------------------------

    async def worktree_diff(self, request: web.Request) -> web.StreamResponse:
        """Rule 2: `{"branch", "base_branch", "diff", "truncated"}` or the master's refusal."""
        session_id = request.match_info["session_id"]
        answer = await self.edge.session_worktree(self._subject(request), session_id, "diff")
        return _json(answer)

    async def worktree_act(self, request: web.Request) -> web.StreamResponse:
        body = await _object(request)
        action = body.get("action") if body else None
        if action not in ACTIONS:
            return _error(400, "INVALID_ACTION", "action must be merge or discard")
        session_id = request.match_info["session_id"]
        answer = await self.edge.session_worktree(self._subject(request), session_id, action)
        return _json(answer)

    # --- voice (issue 30 §6) -------------------------------------------------------------------

    async def voice_state(self, request: web.Request) -> web.StreamResponse:
        return _json({"configured": self.transcriber.configured})

    async def transcribe(self, request: web.Request) -> web.StreamResponse:
        """Rule 3."""
        if not self.transcriber.configured:
            return _error(503, "VOICE_NOT_CONFIGURED", NOT_CONFIGURED)
        mime_type = request.content_type
        if not is_audio(mime_type) and mime_type != "video/webm":
            return _error(415, "NOT_AUDIO", "send the recording as audio/webm or audio/ogg")
        if (request.content_length or 0) > MAX_AUDIO_BYTES:
            return _too_large()
        data = bytearray()
        async for chunk in request.content.iter_chunked(64 * 1024):
            data += chunk
            if len(data) > MAX_AUDIO_BYTES:
                return _too_large()
        if not data:
            return _error(400, "EMPTY_AUDIO", "the recording is empty; try again")
        name = CLIP_NAMES.get(mime_type, "voice.webm")
        try:
            text = await self.transcriber.transcribe(name, mime_type, bytes(data))
        except VoiceError as exc:  # already worded for the person, never a traceback
            return _error(502, "TRANSCRIPTION_FAILED", str(exc))
        return _json({"text": text})

    # --- schedules (issue 30 §5) ---------------------------------------------------------------

    async def schedules(self, request: web.Request) -> web.StreamResponse:
        return _json({"schedules": await self.edge.list_schedules(self._subject(request))})

    async def create_schedule(self, request: web.Request) -> web.StreamResponse:
        body = await _object(request)
        if body is None:
            return _error(400, "INVALID_JSON", "the body must be a JSON object")
        wanted = {k: body[k] for k in SCHEDULE_FIELDS if body.get(k) not in (None, "")}
        if any(not isinstance(v, str) for v in wanted.values()):
            return _error(400, "INVALID_REQUEST", "every field of a schedule is a string")
        created = await self.edge.create_schedule(self._subject(request), wanted)
        return _json(created, status=201)

    async def pause_schedule(self, request: web.Request) -> web.StreamResponse:
        schedule_id = request.match_info["schedule_id"]
        pause = request.match_info["verb"] == "pause"
        answer = await self.edge.pause_schedule(self._subject(request), schedule_id, pause)
        return _json(answer)

    async def delete_schedule(self, request: web.Request) -> web.StreamResponse:
        schedule_id = request.match_info["schedule_id"]  # the client quotes it
        await self.edge.delete_schedule(self._subject(request), schedule_id)
        return web.Response(status=204)


def _too_large() -> web.Response:
    return _error(
        413, "AUDIO_TOO_LARGE", f"a recording may be at most {MAX_AUDIO_BYTES:,} bytes; record less"
    )
