"""`FakeTranscription`: an OpenAI-compatible `POST /v1/audio/transcriptions` on loopback, as a
local whisper server speaks it, recording what it was sent (issue 30 §6).

    async with FakeTranscription(text="hello there") as whisper:
        ...  # RAWP_GATEWAY_TRANSCRIBE_URL=whisper.base_url
        [heard] = whisper.requests  # file name, type, bytes, model, Authorization header

`text`, `status` and `delay_s` say how the next requests are answered; change them between
requests. The answer is `{"text": text}` with status 200, else `{"error": …}` with `status`.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass

from aiohttp import web


@dataclass(frozen=True)
class Heard:
    """One request the fake received."""

    filename: str | None
    content_type: str | None
    data: bytes
    model: str | None
    fields: dict[str, str]
    authorization: str | None


class FakeTranscription:
    def __init__(self, text: str = "", status: int = 200, delay_s: float = 0.0) -> None:
        self.text = text
        self.status = status
        self.delay_s = delay_s
        self.requests: list[Heard] = []
        self.port = 0
        self._runner: web.AppRunner | None = None
        self._closing = asyncio.Event()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def __aenter__(self) -> FakeTranscription:
        app = web.Application()
        app.router.add_post("/v1/audio/transcriptions", self._transcribe)
        self._runner = web.AppRunner(app, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = self._runner.addresses[0][1]
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._closing.set()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _transcribe(self, request: web.Request) -> web.Response:
        form = await request.post()
        upload = form.get("file")
        fields = {k: v for k, v in form.items() if isinstance(v, str)}
        self.requests.append(
            Heard(
                filename=getattr(upload, "filename", None),
                content_type=getattr(upload, "content_type", None),
                data=upload.file.read() if isinstance(upload, web.FileField) else b"",
                model=fields.get("model"),
                fields=fields,
                authorization=request.headers.get("Authorization"),
            )
        )
        if self.delay_s:  # ended early when the fake closes, so no test waits it out
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closing.wait(), self.delay_s)
        if self.status != 200:
            return web.json_response({"error": {"message": "the model failed"}}, status=self.status)
        return web.json_response({"text": self.text})
