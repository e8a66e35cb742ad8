"""The fake Discord REST API (v10) that discord.py reaches through `discord.http.Route.BASE`.

A middleware records every request in the `CallLog` (also unknown routes, answered 404 like
Discord) and applies the `RateLimitPlan`. Answers are shaped like Discord's so discord.py builds
real `Message`, `Thread`, `AppCommand` and `InteractionCallbackResponse` objects from them.

A message created with `nonce` and `enforce_nonce: true` is de-duplicated as Discord does: a
second one by the same author with the same nonce within `NONCE_WINDOW_S` gets the first
message back and creates nothing (no second MESSAGE_CREATE either).

A multipart message (discord.py's `send(file=…)`) gets its files as `attachments` and each is
recorded in `uploads` with its name, size and bytes; a file over `max_upload_bytes` (Discord's
10 MiB without boosts) is refused with 413 (40005) as Discord does.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from .calls import Call, CallLog, RateLimitPlan
from .discord_payloads import DiscordWorld, now_iso

API_PREFIX = "/api/v10"
BODY = web.RequestKey("body", object)  # the request body the middleware parsed and recorded
FILES = web.RequestKey("files", list)  # (file name, bytes) of a multipart upload
# Discord's upload limit for a bot in a server without boosts; more answers 413 (40005).
MAX_UPLOAD_BYTES = 10 * 1024 * 1024
Dispatch = Callable[[str, dict[str, Any]], Awaitable[None]]

EPHEMERAL = 1 << 6  # message flag: only the invoking user sees it
NONCE_WINDOW_S = 300.0  # Discord: "checked for uniqueness in the past few minutes"

# Interaction callback types (discord/types/interactions.py InteractionResponseType).
CALLBACK_CHANNEL_MESSAGE = 4
CALLBACK_DEFERRED_CHANNEL_MESSAGE = 5
CALLBACK_UPDATE_MESSAGE = 7


def json_response(data: Any, status: int = 200, headers: dict[str, str] | None = None):
    """JSON with a bare `application/json` content type: discord.py compares it exactly."""
    headers = {**(headers or {}), "Content-Type": "application/json"}
    return web.Response(body=json.dumps(data).encode(), status=status, headers=headers)


def discord_error(status: int, message: str, code: int = 0) -> web.Response:
    return json_response({"message": message, "code": code}, status=status)


def rate_limited(retry_after: float, is_global: bool, path: str) -> web.Response:
    """A 429 as Discord sends it. discord.py treats a 429 without `Via` as a Cloudflare ban."""
    headers = {
        "Retry-After": str(max(1, round(retry_after))),
        "X-RateLimit-Limit": "5",
        "X-RateLimit-Remaining": "0",
        "X-RateLimit-Reset-After": f"{retry_after:.3f}",
        "X-RateLimit-Bucket": "fake-" + path.strip("/").split("/")[0],
        "X-RateLimit-Scope": "global" if is_global else "user",
        "Via": "1.1 google",
    }
    body = {
        "message": "You are being rate limited.",
        "retry_after": retry_after,
        "global": is_global,
    }
    return json_response(body, status=429, headers=headers)


class DiscordRefusal(Exception):
    """An error answer with Discord's JSON error body `{"message", "code"}`."""

    def __init__(self, status: int, message: str, code: int = 0) -> None:
        super().__init__(message)
        self.status, self.message, self.code = status, message, code


INVALID_JSON = (400, "The request body contains invalid JSON.", 50109)
INVALID_FORM_BODY = (400, "Invalid Form Body", 50035)


def _json(raw: bytes | str) -> Any:
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise DiscordRefusal(*INVALID_JSON) from exc


async def read_body(request: web.Request) -> tuple[Any, tuple[str, ...], bytes]:
    """JSON body, or the `payload_json` part plus file names of a multipart upload (the files'
    bytes are kept on the request under `FILES`, for the route that stores them).

    Returns (parsed body, file names, raw bytes); raises DiscordRefusal on invalid JSON, after
    the raw bytes were read, so the refused request is still recorded.
    """
    if request.content_type.startswith("multipart/"):
        payload_json, files = None, []
        async for part in await request.multipart():
            if part.name == "payload_json":
                payload_json = await part.text()
            elif part.filename:
                files.append((part.filename, bytes(await part.read())))
        request[FILES] = files
        names = tuple(name for name, _ in files)
        return (_json(payload_json) if payload_json else None), names, b""
    raw = await request.read()
    return (_json(raw) if raw else None), (), raw


def body_object(request: web.Request) -> dict[str, Any]:
    """The JSON object a route needs; an array or a scalar is an invalid form body."""
    body = request[BODY]
    if body is None:
        return {}
    if not isinstance(body, dict):
        raise DiscordRefusal(*INVALID_FORM_BODY)
    return body


MESSAGE_FIELD_TYPES = {
    "content": str,
    "embeds": list,
    "components": list,
    "message_reference": dict,
    "flags": int,
}


def check_message_body(body: dict[str, Any]) -> str:
    """Refuse what Discord refuses (wrong types, content over 2,000); return the content."""
    wrong = [
        key
        for key, kind in MESSAGE_FIELD_TYPES.items()
        if body.get(key) is not None and not isinstance(body[key], kind)
    ]
    content = body.get("content") or ""
    # 2,000 characters is Discord's hard limit: the adapter must chunk before sending.
    if wrong or len(content) > 2000:
        raise DiscordRefusal(*INVALID_FORM_BODY)
    return content


class DiscordRest:
    """Route handlers plus the state they keep (messages, commands, interaction answers)."""

    def __init__(
        self,
        world: DiscordWorld,
        log: CallLog,
        limits: RateLimitPlan,
        dispatch: Dispatch,
        gateway_url: Callable[[], str],
    ) -> None:
        self.world = world
        self.log = log
        self.limits = limits
        self.dispatch = dispatch
        self.gateway_url = gateway_url
        self.echo_own_messages = True  # Discord sends MESSAGE_CREATE for the bot's own messages
        self.messages: dict[str, dict[str, Any]] = {}
        self.commands: dict[str, list[dict[str, Any]]] = {}  # "global" or guild id → commands
        self.interactions: dict[str, dict[str, Any]] = {}  # token → INTERACTION_CREATE payload
        self.interaction_created: dict[str, float] = {}  # token → monotonic time of injection
        # Discord refuses a first answer later than 3 s after the interaction (10062).
        self.interaction_deadline = 3.0
        self.answered: dict[str, dict[str, Any]] = {}  # token → callback body
        self.original: dict[str, str] = {}  # token → message id of the original response
        self._tasks: set[asyncio.Future] = set()
        self.max_upload_bytes = MAX_UPLOAD_BYTES
        self.uploads: list[dict[str, Any]] = []  # {channel_id, message_id, filename, size, data}
        # (author id, nonce) → (monotonic time, message) for enforce_nonce
        self._nonces: dict[tuple[str, str], tuple[float, dict[str, Any]]] = {}

    def application(self) -> web.Application:
        app = web.Application(middlewares=[self._record])
        r = app.router
        r.add_get("/users/@me", self.me)
        r.add_get("/oauth2/applications/@me", self.app_info)
        r.add_get("/gateway", self.gateway)
        r.add_get("/gateway/bot", self.gateway)
        r.add_route("*", "/applications/{app}/commands", self.app_commands)
        r.add_route("*", "/applications/{app}/guilds/{guild}/commands", self.app_commands)
        r.add_get("/channels/{channel}", self.get_channel)
        r.add_post("/channels/{channel}/messages", self.create_message)
        r.add_get("/channels/{channel}/messages/{message}", self.get_message)
        r.add_patch("/channels/{channel}/messages/{message}", self.edit_message)
        r.add_delete("/channels/{channel}/messages/{message}", self.delete_message)
        r.add_post("/channels/{channel}/typing", self.no_content)
        reaction = "/channels/{channel}/messages/{message}/reactions/{emoji}/@me"
        r.add_put(reaction, self.reaction)
        r.add_delete(reaction, self.reaction)
        r.add_post("/channels/{channel}/messages/{message}/threads", self.thread_from_message)
        r.add_post("/channels/{channel}/threads", self.thread_without_message)
        r.add_post("/interactions/{interaction}/{token}/callback", self.interaction_callback)
        r.add_post("/webhooks/{app}/{token}", self.followup)
        webhook_message = "/webhooks/{app}/{token}/messages/{message}"
        r.add_get(webhook_message, self.webhook_message)
        r.add_patch(webhook_message, self.webhook_message)
        r.add_delete(webhook_message, self.webhook_message)
        return app

    # --- recording, auth and planned 429s --------------------------------------------------

    @web.middleware
    async def _record(self, request: web.Request, handler) -> web.StreamResponse:
        path = request.path.removeprefix(API_PREFIX)
        body, files, refusal = None, (), None
        try:
            body, files, _ = await read_body(request)
        except DiscordRefusal as invalid:
            refusal, body = invalid, (await request.read()).decode("utf-8", "replace")
        request[BODY] = body
        planned = self.limits.take(request.method, path)
        if planned is not None:
            response = rate_limited(planned.retry_after, planned.is_global, path)
        elif not self._authorized(request, path):
            response = discord_error(401, "401: Unauthorized")
        elif refusal is not None:
            response = discord_error(refusal.status, refusal.message, refusal.code)
        else:
            try:
                response = await handler(request)
            except DiscordRefusal as refused:
                response = discord_error(refused.status, refused.message, refused.code)
            except web.HTTPException as refused:  # unknown route or method
                response = discord_error(refused.status, refused.text or refused.reason)
        self.log.record(
            Call(
                method=request.method,
                path=path,
                body=body,
                query=dict(request.query),
                headers=dict(request.headers),
                status=response.status,
                files=files,
                response=json.loads(response.body) if response.body else None,
            )
        )
        return response

    def _authorized(self, request: web.Request, path: str) -> bool:
        # Interaction callbacks and webhook followups authenticate by the token in the path.
        if path.startswith(("/interactions/", "/webhooks/")):
            return True
        return request.headers.get("Authorization") == f"Bot {self.world.bot_token}"

    # --- bootstrap ---------------------------------------------------------------------------

    async def me(self, request: web.Request) -> web.Response:
        return json_response(self.world.bot_user)

    async def app_info(self, request: web.Request) -> web.Response:
        return json_response(self.world.application_info())

    async def gateway(self, request: web.Request) -> web.Response:
        concurrency = self.world.max_concurrency
        limit = {"total": 1000, "remaining": 999, "reset_after": 0, "max_concurrency": concurrency}
        shards = self.world.recommended_shards  # GET /gateway/bot; what shard_count=None uses
        return json_response(
            {"url": self.gateway_url(), "shards": shards, "session_start_limit": limit}
        )

    async def app_commands(self, request: web.Request) -> web.Response:
        if request.match_info["app"] != self.world.application_id:
            raise DiscordRefusal(404, "Unknown Application", 10002)
        scope = request.match_info.get("guild", "global")
        if request.method == "PUT":  # bulk overwrite, what CommandTree.sync() sends
            stored = []
            commands = request[BODY]
            if not isinstance(commands, list) or not all(isinstance(c, dict) for c in commands):
                raise DiscordRefusal(*INVALID_FORM_BODY)
            for command in commands:
                stored.append(
                    {
                        "type": 1,
                        "description": "",
                        **command,
                        "id": self.world.ids.next(),
                        "application_id": self.world.application_id,
                        "version": self.world.ids.next(),
                        **({"guild_id": scope} if scope != "global" else {}),
                    }
                )
            self.commands[scope] = stored
        elif request.method != "GET":
            raise web.HTTPMethodNotAllowed(request.method, ["GET", "PUT"])
        return json_response(self.commands.get(scope, []))

    # --- channels and messages -------------------------------------------------------------

    def _channel(self, request: web.Request) -> dict[str, Any] | None:
        return self.world.channels.get(request.match_info["channel"])

    async def get_channel(self, request: web.Request) -> web.Response:
        channel = self._channel(request)
        if channel is None:
            return discord_error(404, "Unknown Channel", 10003)
        return json_response(channel)

    async def create_message(self, request: web.Request) -> web.Response:
        channel = self._channel(request)
        if channel is None:
            return discord_error(404, "Unknown Channel", 10003)
        body = body_object(request)
        nonce = body.get("nonce") if body.get("enforce_nonce") else None
        if nonce is not None:
            seen = self._nonces.get((self.world.bot_user["id"], str(nonce)))
            if seen is not None and time.monotonic() - seen[0] < NONCE_WINDOW_S:
                return json_response(seen[1])  # the message already made, nothing new
        files = request.get(FILES) or []
        if any(len(data) > self.max_upload_bytes for _, data in files):
            return discord_error(413, "Request entity too large", 40005)
        message = self._store_message(channel["id"], body, files)
        if nonce is not None:
            message["nonce"] = str(nonce)
            self._nonces[(self.world.bot_user["id"], str(nonce))] = (time.monotonic(), message)
        return json_response(message)

    def _store_message(
        self, channel_id: str, body: dict[str, Any], files: list[tuple[str, bytes]] = ()
    ) -> dict[str, Any]:
        content = check_message_body(body)
        extra = {k: body[k] for k in ("embeds", "components", "flags") if body.get(k) is not None}
        if files:  # message attachments, as Discord answers an upload
            extra["attachments"] = [self._attachment(channel_id, *file) for file in files]
        if body.get("message_reference"):
            extra["message_reference"] = {**body["message_reference"], "type": 0}
        message = self.world.message(channel_id, content, extra=extra)
        self.messages[message["id"]] = message
        for attachment, (_, data) in zip(message["attachments"], files, strict=False):
            self.uploads.append(
                {
                    "channel_id": channel_id,
                    "message_id": message["id"],
                    "filename": attachment["filename"],
                    "size": attachment["size"],
                    "data": data,
                }
            )
        # Discord dispatches MESSAGE_CREATE for the bot's own messages, but never for ephemerals.
        if self.echo_own_messages and not (message["flags"] & EPHEMERAL):
            self._later(self.dispatch("MESSAGE_CREATE", message))
        return message

    def _attachment(self, channel_id: str, filename: str, data: bytes) -> dict[str, Any]:
        attachment_id = self.world.ids.next()
        url = f"https://cdn.discordapp.com/attachments/{channel_id}/{attachment_id}/{filename}"
        return {
            "id": attachment_id,
            "filename": filename,
            "size": len(data),
            "url": url,
            "proxy_url": url,
        }

    def _later(self, coroutine: Awaitable[None]) -> None:
        # The echo goes out after the HTTP answer, as on Discord; keep a reference to the task.
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _message(self, request: web.Request) -> dict[str, Any] | None:
        message = self.messages.get(request.match_info["message"])
        if message is None or message["channel_id"] != request.match_info["channel"]:
            return None
        return message

    async def get_message(self, request: web.Request) -> web.Response:
        message = self._message(request)
        if message is None:
            return discord_error(404, "Unknown Message", 10008)
        return json_response(message)

    async def edit_message(self, request: web.Request) -> web.Response:
        message = self._message(request)
        if message is None:
            return discord_error(404, "Unknown Message", 10008)
        return json_response(self._apply_edit(message, body_object(request)))

    def _apply_edit(self, message: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        check_message_body(body)
        for key in ("content", "embeds", "components", "flags"):
            if key in body and body[key] is not None:
                message[key] = body[key]
        message["edited_timestamp"] = now_iso()
        return message

    async def delete_message(self, request: web.Request) -> web.Response:
        if self._message(request) is None:
            return discord_error(404, "Unknown Message", 10008)
        del self.messages[request.match_info["message"]]
        return web.Response(status=204)

    async def no_content(self, request: web.Request) -> web.Response:
        if self._channel(request) is None:
            return discord_error(404, "Unknown Channel", 10003)
        return web.Response(status=204)

    async def reaction(self, request: web.Request) -> web.Response:
        if self._message(request) is None:
            return discord_error(404, "Unknown Message", 10008)
        return web.Response(status=204)

    # --- threads -----------------------------------------------------------------------------

    async def thread_from_message(self, request: web.Request) -> web.Response:
        message = self._message(request)
        if message is None:
            return discord_error(404, "Unknown Message", 10008)
        # A thread started from a message takes the message's id, as on Discord.
        if message["id"] in self.world.channels:
            return discord_error(400, "A thread has already been created for this message", 160004)
        return await self._create_thread(request, thread_id=message["id"])

    async def thread_without_message(self, request: web.Request) -> web.Response:
        if self._channel(request) is None:
            return discord_error(404, "Unknown Channel", 10003)
        return await self._create_thread(request, thread_id=self.world.ids.next())

    async def _create_thread(self, request: web.Request, thread_id: str) -> web.Response:
        name = body_object(request).get("name")
        if not isinstance(name, str) or not 1 <= len(name) <= 100:
            raise DiscordRefusal(*INVALID_FORM_BODY)
        thread = self.world.new_thread(
            request.match_info["channel"], self.world.application_id, name, thread_id
        )
        await self.dispatch("THREAD_CREATE", {**thread, "newly_created": True})
        return json_response(thread)

    # --- interactions ------------------------------------------------------------------------

    async def interaction_callback(self, request: web.Request) -> web.Response:
        token = request.match_info["token"]
        interaction = self.interactions.get(token)
        if interaction is None or interaction["id"] != request.match_info["interaction"]:
            return discord_error(404, "Unknown interaction", 10062)
        created = self.interaction_created.get(token, time.monotonic())
        if time.monotonic() - created > self.interaction_deadline:
            return discord_error(404, "Unknown interaction", 10062)
        if token in self.answered:
            return discord_error(400, "Interaction has already been acknowledged.", 40060)
        body = body_object(request)
        kind, data = body.get("type"), body.get("data") or {}
        if not isinstance(kind, int) or not isinstance(data, dict):
            raise DiscordRefusal(*INVALID_FORM_BODY)
        self.answered[token] = body
        message = None
        if kind in (CALLBACK_CHANNEL_MESSAGE, CALLBACK_DEFERRED_CHANNEL_MESSAGE):
            message = self._store_message(interaction["channel_id"], data)
            self.original[token] = message["id"]
        elif kind == CALLBACK_UPDATE_MESSAGE and "message" in interaction:
            message = self.messages.get(interaction["message"]["id"], interaction["message"])
            message = self._apply_edit(message, data)
        if request.query.get("with_response") not in ("1", "true", "True"):
            return web.Response(status=204)
        answer: dict[str, Any] = {
            "interaction": {
                "id": interaction["id"],
                "type": interaction["type"],
                "response_message_id": message["id"] if message else None,
                "response_message_loading": kind == CALLBACK_DEFERRED_CHANNEL_MESSAGE,
                "response_message_ephemeral": bool((data.get("flags") or 0) & EPHEMERAL),
            },
            "resource": {"type": kind, **({"message": message} if message else {})},
        }
        return json_response(answer)

    def _interaction_for(self, request: web.Request) -> dict[str, Any] | None:
        if request.match_info["app"] != self.world.application_id:
            return None
        return self.interactions.get(request.match_info["token"])

    async def followup(self, request: web.Request) -> web.Response:
        interaction = self._interaction_for(request)
        if interaction is None:
            return discord_error(404, "Unknown Webhook", 10015)
        message = self._store_message(interaction["channel_id"], body_object(request))
        return json_response(message)

    async def webhook_message(self, request: web.Request) -> web.Response:
        interaction = self._interaction_for(request)
        if interaction is None:
            return discord_error(404, "Unknown Webhook", 10015)
        token, wanted = request.match_info["token"], request.match_info["message"]
        message_id = self.original.get(token) if wanted == "@original" else wanted
        message = self.messages.get(message_id or "")
        if message is None:
            return discord_error(404, "Unknown Message", 10008)
        if request.method == "DELETE":
            del self.messages[message["id"]]
            return web.Response(status=204)
        if request.method == "PATCH":
            message = self._apply_edit(message, body_object(request))
        return json_response(message)
