"""A fake OpenAI-compatible chat-completions server on loopback (aiohttp).

Each request takes the next `Reply` from `script`, in order, and the server records what it
was sent (`requests`). A reply reproduces one server's habits:

* `chunks` — the `data:` payloads, in order; helpers below build the vLLM (`reasoning`),
  DeepSeek/llama.cpp (`reasoning_content`) and Ollama (`<think>` in content) shapes;
* `done` — whether `data: [DONE]` ends the stream;
* `cut` — drop the connection after the chunks (no finish_reason, no usage, no [DONE]);
* `status`/`error` — an HTTP error with an OpenAI-style error body instead of a stream;
* `hold` — an event the server waits on after the first chunk (to cancel mid-stream).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web

from tests.support import free_port


@dataclass
class Reply:
    chunks: list[dict[str, Any]] = field(default_factory=list)
    done: bool = True
    cut: bool = False
    status: int = 200
    error: str = ""
    hold: asyncio.Event | None = None


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra) -> dict:
    choice = {"index": 0, "delta": delta or {}, "finish_reason": finish}
    return {"id": "c1", "object": "chat.completion.chunk", "choices": [choice], **extra}


def usage_chunk(prompt: int, completion: int, **details) -> dict:
    """The final chunk of `stream_options.include_usage`: no choices, only usage."""
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if "cached" in details:
        usage["prompt_tokens_details"] = {"cached_tokens": details["cached"]}
    if "reasoning" in details:
        usage["completion_tokens_details"] = {"reasoning_tokens": details["reasoning"]}
    return {"id": "c1", "object": "chat.completion.chunk", "choices": [], "usage": usage}


class FakeOpenAI:
    def __init__(self) -> None:
        self.script: deque[Reply] = deque()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._runner: web.AppRunner | None = None
        self.started = asyncio.Event()  # set when a reply's first chunk is written

    async def __aenter__(self) -> FakeOpenAI:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._completions)
        self._runner = web.AppRunner(app, handle_signals=False)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(orjson.loads(await request.read()))
        self.headers.append(dict(request.headers))
        reply = self.script.popleft()
        if reply.status != 200:
            body = {"error": {"message": reply.error, "type": "server_error", "code": None}}
            return web.json_response(body, status=reply.status)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for number, payload in enumerate(reply.chunks):
            await response.write(b"data: " + orjson.dumps(payload) + b"\n\n")
            if number == 0:
                self.started.set()
                if reply.hold is not None:
                    with contextlib.suppress(asyncio.CancelledError):
                        await reply.hold.wait()
        if reply.cut:
            assert request.transport is not None
            request.transport.abort()  # the connection drops mid-body
            return response
        if reply.done:
            await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response
