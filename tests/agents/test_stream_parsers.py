"""Property tests for the stream parsers: any chunking of the input gives the same result."""

from __future__ import annotations

import asyncio
import itertools

from aiohttp import StreamReader
from hypothesis import given
from hypothesis import strategies as st

from client.agents.sse import ThinkSplitter, sse_events

words = st.text(alphabet="ab<>/thinkx \n", max_size=12)


def cuts(text: str, points: list[int]) -> list[str]:
    edges = sorted({min(p, len(text)) for p in points} | {0, len(text)})
    return [text[a:b] for a, b in itertools.pairwise(edges)]


def merged(pieces) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for kind, text in pieces:
        if out and out[-1][0] == kind:
            out[-1] = (kind, out[-1][1] + text)
        elif text:
            out.append((kind, text))
    return out


@given(st.lists(st.tuples(st.booleans(), words), max_size=6), st.lists(st.integers(0, 200)))
def test_think_tags_split_the_same_however_the_content_is_chunked(spans, points):
    # Build content from alternating answer/thinking spans whose text holds no full tag.
    content, expected = "", []
    for is_thought, text in spans:
        text = text.replace("<think>", "").replace("</think>", "")
        if is_thought:
            content += f"<think>{text}</think>"
            expected.append(("thinking", text))
        else:
            content += text
            expected.append(("text", text))
    splitter = ThinkSplitter()
    got = []
    for piece in cuts(content, points):
        got += splitter.feed(piece)
    got += splitter.flush()
    assert merged(got) == merged(expected)


def test_an_unclosed_think_is_all_thinking():
    splitter = ThinkSplitter()
    pieces = splitter.feed("<think>still going") + splitter.flush()
    assert pieces == [("thinking", "still going")]


async def _events(raw: bytes, points: list[int]) -> list[str]:
    class Protocol:
        _reading_paused = False

        def pause_reading(self) -> None: ...

        def resume_reading(self, **_kw) -> None: ...

    reader = StreamReader(Protocol(), 2**16, loop=asyncio.get_running_loop())
    for part in cuts(raw.decode(), points):
        reader.feed_data(part.encode())
    reader.feed_eof()
    return [event async for event in sse_events(reader)]


@given(
    st.lists(st.text(alphabet="abc{}:\"' ", min_size=1, max_size=10), max_size=5),
    st.lists(st.integers(0, 300)),
)
def test_sse_events_survive_any_network_chunking(datas, points):
    raw = "".join(
        f"data: {d}\n\n" if i % 2 else f": keep-alive\ndata: {d}\r\n\r\n"
        for i, d in enumerate(datas)
    ).encode()
    got = asyncio.run(_events(raw, points))
    assert got == [d for d in datas]
