"""Slack's external file upload flow, faked: what `files_upload_v2` of slack_sdk drives.

1. `files.getUploadURLExternal` (`filename`, `length`) answers a `file_id` and an `upload_url`
   on this fake's loopback port;
2. the client POSTs the file's bytes to that URL (no token, as on Slack); the fake records
   them, and answers 200, or 400 when the byte count is not the announced `length`;
3. `files.completeUploadExternal` (`files` = JSON `[{id, title}]`, `channel_id`, `thread_ts`)
   shares the uploaded files: one bot message in the thread carrying `files[]`, which
   `conversations.replies` then shows, and the bytes become downloadable like a user's file.

A planned 429 for the upload URL is added with `FakeSlack.rate_limit("/upload/v1/*")`.
"""

from __future__ import annotations

import json
import mimetypes
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from aiohttp import web

from .calls import Call, CallLog, RateLimitPlan
from .slack_payloads import SlackWorld
from .slack_web import SlackRefusal, SlackWebApi

UPLOAD_PATH = "/upload/v1/{file_id}"
MAX_FILE_BYTES = 1_000_000_000  # Slack: a file may be up to 1 GB


@dataclass
class Upload:
    """One file through the flow: announced, then its bytes, then shared."""

    file_id: str
    filename: str
    length: int
    data: bytes | None = None
    title: str | None = None
    channel: str | None = None
    thread_ts: str | None = None
    ts: str | None = None  # the message that shares it


class SlackFileUploads:
    def __init__(
        self,
        world: SlackWorld,
        web_api: SlackWebApi,
        log: CallLog,
        limits: RateLimitPlan,
        files: dict[str, bytes],
        base_url: Callable[[], str],
    ) -> None:
        self.world = world
        self.web_api = web_api
        self.log = log
        self.limits = limits
        self.files = files  # the FakeSlack's downloadable files (file id → bytes)
        self.base_url = base_url
        self.uploads: dict[str, Upload] = {}
        web_api.methods["files.getUploadURLExternal"] = self.get_upload_url
        web_api.methods["files.completeUploadExternal"] = self.complete

    def shared(self) -> list[Upload]:
        """Uploads shared into a conversation, in order."""
        return [u for u in self.uploads.values() if u.ts is not None]

    def get_upload_url(self, args: dict[str, Any]) -> dict[str, Any]:
        filename, length = args.get("filename"), str(args.get("length", ""))
        if not isinstance(filename, str) or not filename or not length.isdigit():
            raise SlackRefusal("invalid_arguments")
        if int(length) == 0:  # Slack: "Typically only occurs when the `length` provided is 0."
            raise SlackRefusal("missing_argument")
        if int(length) > MAX_FILE_BYTES:
            raise SlackRefusal("file_too_large")
        file_id = "F" + secrets.token_hex(5).upper()
        self.uploads[file_id] = Upload(file_id, filename, int(length))
        upload_url = self.base_url() + UPLOAD_PATH.format(file_id=file_id)
        return {"upload_url": upload_url, "file_id": file_id}

    async def receive(self, request: web.Request) -> web.Response:
        """The upload URL: the file's bytes in the body."""
        data = await request.read()
        upload = self.uploads.get(request.match_info["file_id"])
        planned = self.limits.take("POST", request.path)
        status = 200
        if planned is not None:
            status = 429
        elif upload is None:
            status = 404
        elif len(data) != upload.length:
            status = 400
        else:
            upload.data = data
        self.log.record(Call("POST", request.path, None, status=status))
        headers = {"Retry-After": str(max(0, round(planned.retry_after)))} if planned else {}
        return web.Response(status=status, text=f"OK - {len(data)}", headers=headers)

    def complete(self, args: dict[str, Any]) -> dict[str, Any]:
        files = args.get("files")
        if isinstance(files, str):
            try:
                files = json.loads(files)
            except ValueError as exc:
                raise SlackRefusal("invalid_arguments") from exc
        if not isinstance(files, list) or not files:
            raise SlackRefusal("invalid_arguments")
        uploads = []
        for entry in files:
            upload = self.uploads.get(str((entry or {}).get("id")))
            if upload is None or upload.data is None:
                raise SlackRefusal("file_not_found")
            upload.title = str(entry.get("title") or upload.filename)
            uploads.append(upload)
        channel, thread_ts = args.get("channel_id"), args.get("thread_ts")
        if channel:
            ts = self.world.next_ts()
            for upload in uploads:
                upload.channel, upload.thread_ts, upload.ts = channel, thread_ts, ts
                self.files[upload.file_id] = upload.data or b""
            message = {
                "type": "message",
                "subtype": "file_share",
                "user": self.world.bot_user_id,
                "bot_id": self.world.bot_id,
                "text": "",
                "ts": ts,
                "files": [self._file(u) for u in uploads],
                **({"thread_ts": thread_ts} if thread_ts else {}),
            }
            self.web_api.store_message(channel, message)
        return {"files": [self._file(u) for u in uploads]}

    def _file(self, upload: Upload) -> dict[str, Any]:
        url = f"{self.base_url()}/files-pri/{upload.file_id}/{quote(upload.filename)}"
        mimetype = mimetypes.guess_type(upload.filename)[0] or "application/octet-stream"
        shares = {}
        if upload.channel and upload.ts:
            share = {
                "ts": upload.ts,
                **({"thread_ts": upload.thread_ts} if upload.thread_ts else {}),
            }
            shares = {"public": {upload.channel: [share]}}
        return {
            "id": upload.file_id,
            "name": upload.filename,
            "title": upload.title or upload.filename,
            "mimetype": mimetype,
            "size": upload.length,
            "url_private": url,
            "url_private_download": url,
            "mode": "hosted",
            "is_external": False,
            "shares": shares,
        }
