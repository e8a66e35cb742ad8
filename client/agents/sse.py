"""Two small stream parsers the model-facing kinds need.

* `sse_events` reads Server-Sent Events (`data:` lines, an empty line ends an event) from an
  aiohttp response body, whatever the network's chunk boundaries are;
* `ThinkSplitter` separates `<think>…</think>` spans, which some servers (DeepSeek-R1 on vLLM,
  Ollama, llama.cpp) put inside `delta.content`, from the answer text — also across chunk
  boundaries, where a tag may arrive split in two.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Literal

from aiohttp import StreamReader

OPEN_TAG = "<think>"
CLOSE_TAG = "</think>"


async def sse_events(body: StreamReader) -> AsyncIterator[str]:
    """Yield the `data` of each event (several `data:` lines joined by newlines)."""
    data: list[str] = []
    async for raw in body:
        line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
        if not line:
            if data:
                yield "\n".join(data)
                data = []
            continue
        if line.startswith(":"):  # a comment, used as keep-alive
            continue
        field, _, value = line.partition(":")
        if field == "data":
            data.append(value[1:] if value.startswith(" ") else value)
    if data:  # the stream ended without the final blank line
        yield "\n".join(data)


Piece = tuple[Literal["text", "thinking"], str]


class ThinkSplitter:
    """Feed content pieces; get back (kind, text) pieces with the tags removed.

    A suffix that could be the start of a tag is held back until the next piece (or `flush`)
    decides it. Text before the first `<think>` is answer text; a stream that opens with
    `<think>` and never closes it is all thinking.
    """

    def __init__(self) -> None:
        self.inside = False
        self.pending = ""

    def feed(self, text: str) -> list[Piece]:
        self.pending += text
        out: list[Piece] = []
        while self.pending:
            tag = CLOSE_TAG if self.inside else OPEN_TAG
            kind: Literal["text", "thinking"] = "thinking" if self.inside else "text"
            at = self.pending.find(tag)
            if at >= 0:
                if at:
                    out.append((kind, self.pending[:at]))
                self.pending = self.pending[at + len(tag) :]
                self.inside = not self.inside
                continue
            keep = _partial_tag_suffix(self.pending, tag)
            ready = self.pending[: len(self.pending) - keep]
            if ready:
                out.append((kind, ready))
            self.pending = self.pending[len(ready) :]
            break
        return out

    def flush(self) -> list[Piece]:
        rest, self.pending = self.pending, ""
        return [("thinking" if self.inside else "text", rest)] if rest else []


def _partial_tag_suffix(text: str, tag: str) -> int:
    """Length of the longest suffix of `text` that is a proper prefix of `tag`."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:size]):
            return size
    return 0
