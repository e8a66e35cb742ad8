"""`FakeSlack`: the fake Web API and Socket Mode websocket on one loopback port.

    async with FakeSlack() as slack:
        client = AsyncWebClient(token=slack.world.bot_token, base_url=slack.api_base_url)
        await client.chat_postMessage(channel=slack.world.channel_id, text="hi")
        call = await slack.wait_for_call("chat.postMessage")

`api_base_url` (http://127.0.0.1:PORT/api/) is what SLACK_API_BASE_URL holds. Inbound HTTP
requests into a Bolt app are built and signed with `tests.fakes.slack_signing.post_signed`.
"""

from __future__ import annotations

import json
import secrets
from typing import Any
from urllib.parse import quote

from aiohttp import web

from .calls import Call, CallLog, RateLimitPlan
from .slack_files import UPLOAD_PATH, SlackFileUploads
from .slack_payloads import SlackWorld
from .slack_signing import BoltAnswer, post_signed
from .slack_socket_mode import SlackSocketMode
from .slack_web import SlackWebApi

API_PREFIX = "/api"
SOCKET_MODE_PATH = "/socket-mode/link"


class FakeSlack:
    """A fake Slack on 127.0.0.1: Web API under /api/, Socket Mode at /socket-mode/link."""

    def __init__(
        self, world: SlackWorld | None = None, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        self.world = world or SlackWorld()
        self.host = host
        self.port = port  # 0: a free port, read back after start
        self.log = CallLog()
        self.rate_limits = RateLimitPlan()
        self.web_api = SlackWebApi(self.world, self.log, self.rate_limits, lambda: self.socket_url)
        self.socket_mode = SlackSocketMode(
            self.log, self.web_api.tickets, lambda: self.world.app_id
        )
        self.files: dict[str, bytes] = {}  # file id → bytes served at url_private_download
        # files.getUploadURLExternal → upload URL → files.completeUploadExternal (files_upload_v2)
        self.file_uploads = SlackFileUploads(
            self.world, self.web_api, self.log, self.rate_limits, self.files, self._base_url
        )
        self._runner: web.AppRunner | None = None

    async def __aenter__(self) -> FakeSlack:
        root = web.Application()
        root.router.add_get(SOCKET_MODE_PATH, self.socket_mode.handle)
        root.router.add_get("/files-pri/{file_id}/{name}", self._file)
        root.router.add_post("/response-url/{hook}", self._response_url)
        root.router.add_post(UPLOAD_PATH, self.file_uploads.receive)
        root.add_subapp(API_PREFIX, self.web_api.application())
        self._runner = web.AppRunner(root, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        self.port = self._runner.addresses[0][1]
        self.world.response_url_base = f"http://{self.host}:{self.port}/response-url/"
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.socket_mode.close_all()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _response_url(self, request: web.Request) -> web.Response:
        """A response_url POST (Bolt's `respond()`): recorded as POST /response-url/<id>."""
        raw = await request.read()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        self.log.record(Call("POST", request.path, body, headers=dict(request.headers)))
        return web.Response(text="ok")

    async def _file(self, request: web.Request) -> web.Response:
        """url_private(_download): file bytes, only with the bot token, as on Slack."""
        data = self.files.get(request.match_info["file_id"])
        authorized = request.headers.get("Authorization") == f"Bearer {self.world.bot_token}"
        status = 200 if data is not None and authorized else 404 if authorized else 403
        self.log.record(Call("GET", request.path, None, status=status))
        if status != 200:
            return web.Response(status=status, text="no file for you")
        return web.Response(body=data, content_type="application/octet-stream")

    def add_file(self, name: str, data: bytes, mimetype: str = "text/plain") -> dict[str, Any]:
        """Store a file a user shared; returns the `files[]` entry for `message_event(files=)`."""
        file_id = "F" + secrets.token_hex(5).upper()
        self.files[file_id] = data
        url = f"http://{self.host}:{self.port}/files-pri/{file_id}/{quote(name)}"
        return {
            "id": file_id,
            "name": name,
            "title": name,
            "mimetype": mimetype,
            "filetype": name.rsplit(".", 1)[-1] if "." in name else "text",
            "size": len(data),
            "url_private": url,
            "url_private_download": url,
            "mode": "hosted",
            "is_external": False,
        }

    def _base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def api_base_url(self) -> str:
        """The Web API base (SLACK_API_BASE_URL), with the trailing slash slack_sdk expects."""
        return f"http://{self.host}:{self.port}{API_PREFIX}/"

    @property
    def socket_url(self) -> str:
        return f"ws://{self.host}:{self.port}{SOCKET_MODE_PATH}"

    # --- assertions ---------------------------------------------------------------------------

    async def wait_for_call(
        self,
        api_method: str,
        timeout: float = 5.0,  # noqa: ASYNC109
        **kw: Any,
    ) -> Call:
        """Wait for a Web API call, e.g. "chat.postMessage" (glob patterns allowed), any verb."""
        return await self.log.wait_for_call("*", api_method, timeout, **kw)

    def calls(self, api_method: str) -> list[Call]:
        return self.log.find("*", api_method)

    def ok_calls(self, api_method: str) -> list[Call]:
        """Calls Slack answered with ok: true (rate-limited and refused attempts excluded)."""
        return self.log.find(
            "*", api_method, where=lambda c: isinstance(c.response, dict) and c.response["ok"]
        )

    def rate_limit(self, api_method: str, *, times: int = 1, retry_after: int = 1) -> None:
        """Answer the next `times` calls to `api_method` with 429 and Retry-After (seconds)."""
        self.rate_limits.add("*", api_method, times=times, retry_after=retry_after)

    # --- Socket Mode --------------------------------------------------------------------------

    async def wait_for_socket_client(self, timeout: float = 10.0) -> None:  # noqa: ASYNC109
        await self.socket_mode.wait_for_connection(timeout)

    async def push_event(self, event: dict[str, Any]) -> str:
        """Push an `events_api` envelope around `event`; returns its envelope_id."""
        self.remember_message(event)
        return await self.socket_mode.push("events_api", self.world.event_callback(event))

    async def push_interactive(self, payload: dict[str, Any]) -> str:
        return await self.socket_mode.push("interactive", payload)

    async def push_slash_command(self, fields: dict[str, str]) -> str:
        return await self.socket_mode.push("slash_commands", fields)

    async def wait_for_ack(self, envelope_id: str, timeout: float = 5.0) -> Call:  # noqa: ASYNC109
        """The client's acknowledgement of one envelope (its body may carry a response)."""
        return await self.log.wait_for_call(
            "WS", "ack", timeout, where=lambda c: c.body.get("envelope_id") == envelope_id
        )

    def remember_message(self, event: dict[str, Any]) -> None:
        """Store a human's message, so reactions.add and conversations.replies find it."""
        if event.get("type") in ("message", "app_mention") and "ts" in event:
            self.web_api.store_message(event["channel"], dict(event))

    # --- signed HTTP requests into a Bolt app (HTTP mode) -------------------------------------

    async def post_event_to(self, url: str, event: dict[str, Any], **kw: Any) -> BoltAnswer:
        """POST a signed `event_callback` around `event` to a Bolt endpoint."""
        self.remember_message(event)
        body = self.world.event_callback(event)
        return await post_signed(url, "event", body, self.world.signing_secret, **kw)

    async def post_interactive_to(self, url: str, payload: dict[str, Any], **kw) -> BoltAnswer:
        """POST a signed interactivity payload (block_actions, block_suggestion, ...)."""
        return await post_signed(url, "interactive", payload, self.world.signing_secret, **kw)

    async def post_slash_command_to(self, url: str, fields: dict[str, str], **kw) -> BoltAnswer:
        return await post_signed(url, "slash_command", fields, self.world.signing_secret, **kw)
