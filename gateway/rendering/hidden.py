"""Text the reader chooses to reveal: Discord-style spoilers (G-NS-16).

A spoiler is `||text||`. A `||` inside the text would end it early and show the rest, so each
`|` that is followed by another gets a zero-width space after it: the reader sees the same
characters and nothing escapes the spoiler. Long text is split with the markdown chunker first,
so each message is its own balanced spoiler within the platform limit.
"""

from __future__ import annotations

import re

from gateway.rendering.chunker import split_markdown

ZWSP = "\u200b"
_PIPE_PAIR = re.compile(r"\|(?=\|)")


def neutralise_spoilers(text: str) -> str:
    """No `||` survives; the characters the reader sees are unchanged."""
    return _PIPE_PAIR.sub("|" + ZWSP, text)


def spoiler_messages(title: str, text: str, limit: int) -> list[str]:
    """`title ||text||`, split into messages of at most `limit` code points."""
    overhead = len(title) + 1 + 4 + 2  # "title " + "||"×2 + padding at both ends
    messages = []
    for i, piece in enumerate(split_markdown(neutralise_spoilers(text), limit - overhead)):
        # A piece starting or ending with "|" would meet the markers as "|||".
        inner = (ZWSP if piece.startswith("|") else "") + piece
        inner += ZWSP if inner.endswith("|") else ""
        messages.append(f"{title} ||{inner}||" if i == 0 and title else f"||{inner}||")
    return messages
