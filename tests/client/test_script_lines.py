"""A jsonl script's stdout, read by chunk (issue 20): the same lines and events as a line at a
time, and the same verdict on a bad line as `json.loads` of the decoded, stripped text."""

import asyncio
import json

import pytest

from client.agents import script
from client.agents.script import BLANK, line_batches, read_event


async def lines_of(chunks: list[bytes], monkeypatch, chunk_size: int = 7) -> list[bytes]:
    monkeypatch.setattr(script, "READ_CHUNK", chunk_size)  # lines cut across reads
    stream = asyncio.StreamReader()
    for chunk in chunks:
        stream.feed_data(chunk)
    stream.feed_eof()
    return [line async for batch in line_batches(stream) for line in batch]


async def test_lines_come_whole_however_the_reads_cut_them(monkeypatch):
    data = b'{"a": 1}\n\n{"type": "x", "payload": {"text": "long enough"}}\nlast, no newline'
    expected = data.split(b"\n")
    for size in (1, 3, 7, 64, 1 << 16):
        assert await lines_of([data], monkeypatch, size) == expected


async def test_a_line_past_the_limit_fails_as_readline_does(monkeypatch):
    monkeypatch.setattr(script, "LINE_LIMIT", 20)
    with pytest.raises(ValueError):
        await lines_of([b"x" * 50], monkeypatch)


@pytest.mark.parametrize(
    "raw",
    [
        b'{"type": "agent.text.delta", "payload": {"content_index": 0, "text": "hi"}}',
        b'  {"type": "a.b", "payload": {}}\r',
        b'{"t": "caf\xc3\xa9"}',
        b'{"t": "\xff\xfe bad utf-8"}',  # replaced, as the decode always did
        b'{"n": NaN, "big": 123456789012345678901234567890}',
        b'{"s": "\\ud800"}',  # a lone surrogate: json.loads takes it, orjson does not
        b"\xef\xbb\xbf{}",
        b"\x0c{}\x0c",
        b"[1, 2]",
        b"not json",
        b"{",
    ],
)
def test_a_line_reads_as_json_loads_of_its_stripped_text(raw):
    line = raw.decode(errors="replace").strip()
    try:
        expected = (json.loads(line), None)
    except ValueError:
        expected = (None, "a line that is not JSON")
    got = read_event(raw)
    assert repr(got) == repr(expected)  # repr: NaN is not equal to itself


@pytest.mark.parametrize("raw", [b"", b"   ", b"\t\r", b"\xc2\xa0"])
def test_a_blank_line_is_skipped(raw):
    assert read_event(raw) == (BLANK, None)
