"""A fake Anthropic Messages API on loopback, for the real `claude` CLI and ACP adapter.

The real agents honour `ANTHROPIC_BASE_URL`; pointed here, they run offline while this
server plays "the model". `script` holds one `Turn` per *main-loop* request (a request that
offers tools); each turn is a list of content blocks to stream back:

* `text("…")`, `thinking("…")`, `tool_use(name, input)` — streamed as `content_block_start`,
  deltas, `content_block_stop`, then `message_delta` (usage, stop_reason) and `message_stop`;
* `Turn(error=(status, type, message))` answers with an Anthropic error body instead;
* `Turn(hold=event)` waits on the event after the first block (to interrupt mid-turn).

Side requests the CLI makes on its own (titles, topic checks, `count_tokens`, quota probes)
get a short fixed answer and never consume the script. Every request is kept in `requests`.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web

from tests.support import free_port

_ids = itertools.count(1)


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def thinking(value: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": value, "signature": "sig-fake"}


def tool_use(name: str, input: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": f"toolu_fake{next(_ids):04d}", "name": name, "input": input}


@dataclass
class Turn:
    blocks: list[dict[str, Any]] = field(default_factory=list)
    error: tuple[int, str, str] | None = None
    hold: asyncio.Event | None = None
    usage: tuple[int, int] = (120, 30)


class FakeAnthropic:
    def __init__(self) -> None:
        self.script: deque[Turn] = deque()
        self.requests: list[dict[str, Any]] = []  # {path, body}
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.holding = asyncio.Event()  # set while a held turn waits
        self._runner: web.AppRunner | None = None

    async def __aenter__(self) -> FakeAnthropic:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._any)
        self._runner = web.AppRunner(app, handle_signals=False)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()

    def main_requests(self) -> list[dict[str, Any]]:
        return [r["body"] for r in self.requests if _is_main(r)]

    async def _any(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        body = orjson.loads(raw) if raw else {}
        entry = {"path": request.path, "method": request.method, "body": body}
        self.requests.append(entry)
        if request.path.endswith("/count_tokens"):
            return web.json_response({"input_tokens": 42})
        if request.path != "/v1/messages":
            return web.json_response({}, status=404)
        turn = self.script.popleft() if _is_main(entry) and self.script else Turn([text("ok")])
        if turn.error is not None:
            status, kind, message = turn.error
            body = {"type": "error", "error": {"type": kind, "message": message}}
            return web.json_response(body, status=status, headers={"x-should-retry": "false"})
        if not body.get("stream"):
            return web.json_response(_message(body, turn))
        try:
            return await self._stream(request, body, turn)
        except ConnectionError:  # the agent hung up mid-stream (interrupted, killed)
            return web.Response(status=499)

    async def _stream(self, request: web.Request, body: dict, turn: Turn) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)

        async def send(event: str, data: dict[str, Any]) -> None:
            await response.write(f"event: {event}\ndata: ".encode() + orjson.dumps(data) + b"\n\n")

        start = _message(body, turn)
        start["content"], start["stop_reason"] = [], None
        start["usage"] = {"input_tokens": turn.usage[0], "output_tokens": 1}
        await send("message_start", {"type": "message_start", "message": start})
        for index, block in enumerate(turn.blocks):
            await self._block(send, index, block)
            if index == 0 and turn.hold is not None:
                self.holding.set()
                with contextlib.suppress(asyncio.CancelledError, ConnectionError):
                    await turn.hold.wait()
        stop = "tool_use" if any(b["type"] == "tool_use" for b in turn.blocks) else "end_turn"
        await send(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": turn.usage[1]},
            },
        )
        await send("message_stop", {"type": "message_stop"})
        await response.write_eof()
        return response

    @staticmethod
    async def _block(send, index: int, block: dict[str, Any]) -> None:
        kind = block["type"]
        empty = {
            "text": {"type": "text", "text": ""},
            "thinking": {"type": "thinking", "thinking": "", "signature": ""},
            "tool_use": {**block, "input": {}},
        }[kind]
        await send(
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": empty},
        )
        if kind == "text":
            for piece in _halves(block["text"]):
                delta = {"type": "text_delta", "text": piece}
                await send("content_block_delta", _delta(index, delta))
        elif kind == "thinking":
            for piece in _halves(block["thinking"]):
                delta = {"type": "thinking_delta", "thinking": piece}
                await send("content_block_delta", _delta(index, delta))
            delta = {"type": "signature_delta", "signature": block["signature"]}
            await send("content_block_delta", _delta(index, delta))
        else:
            partial = orjson.dumps(block["input"]).decode()
            for piece in _halves(partial):
                delta = {"type": "input_json_delta", "partial_json": piece}
                await send("content_block_delta", _delta(index, delta))
        await send("content_block_stop", {"type": "content_block_stop", "index": index})


def _is_main(entry: dict[str, Any]) -> bool:
    body = entry["body"]
    return entry["path"] == "/v1/messages" and bool(body.get("tools")) and body.get("stream")


def _delta(index: int, delta: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": delta}


def _halves(value: str) -> list[str]:
    middle = len(value) // 2
    return [part for part in (value[:middle], value[middle:]) if part]


def _message(body: dict[str, Any], turn: Turn) -> dict[str, Any]:
    return {
        "id": f"msg_fake{next(_ids):04d}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "claude-fake"),
        "content": turn.blocks,
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": turn.usage[0], "output_tokens": turn.usage[1]},
    }
