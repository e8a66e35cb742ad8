"""Keeping every frame the client sends within the pinned `max_frame_size` (RAWP §4.1.5).

Long text is split across several frames of the same type rather than refused: the pieces of
an `agent.text.delta` are deltas themselves, so the receiver's concatenation is unchanged.
Sizes are bytes of the serialized frame, JSON escaping included (a newline costs two bytes,
a control character six), so the split is exact, not estimated.
"""

from __future__ import annotations

from collections.abc import Iterator

import orjson

# Event types whose text field may be split into several frames, and that field.
SPLITTABLE = {
    "agent.text.delta": "text",
    "agent.thinking.delta": "text",
    "tool.invoke.stream": "text",
}
# Frames whose text cannot be split: the field is shortened to fit, the deltas carry it all.
SHORTENABLE = {"agent.text.done": "text", "tool.invoke.result": "output"}
TRUNCATION_NOTE = "\n…[truncated to fit max_frame_size]"


def encoded_size(text: str) -> int:
    """Bytes `text` takes inside a JSON string (quotes excluded)."""
    return len(orjson.dumps(text)) - 2


def split_text(text: str, budget: int) -> Iterator[str]:
    """Split `text` into pieces whose JSON-encoded size is at most `budget` bytes.

    Pieces are whole code points, never empty, and join back to `text`.
    """
    if budget < 6:  # the widest single code point escape (\\u0000) must fit
        raise ValueError("budget too small to carry any character")
    start, used = 0, 0
    for index, char in enumerate(text):
        cost = encoded_size(char)
        if used + cost > budget:
            yield text[start:index]
            start, used = index, 0
        used += cost
    if start < len(text) or not text:
        yield text[start:]


def shorten(text: str, budget: int) -> str:
    """The longest prefix of `text` that fits `budget` with the truncation note appended."""
    room = budget - encoded_size(TRUNCATION_NOTE)
    if room <= 0:
        return ""
    return next(split_text(text, room)) + TRUNCATION_NOTE
