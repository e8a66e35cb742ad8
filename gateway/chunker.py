"""Split markdown into messages no longer than a platform's limit (G-NS-15, A-35).

Rules, in order of preference for where a chunk ends:

1. the whole rest of the text, if it fits;
2. after a blank line outside a code block (a paragraph boundary) or after a closing fence;
3. after any line break;
4. inside one over-long line, at the limit, preferring just after a space.

Whatever the cut, nothing is lost or reordered: the chunks' `body`s concatenated are the input,
character for character. A chunk that ends inside a code block gets a closing fence appended
(`suffix`) and the next chunk reopens it with the same fence and language (`prefix`), so every
chunk is balanced on its own (A-35: a code block longer than a message spans messages that way).

Lengths are code points (`len`), which is how Discord counts its 2,000 (A-35). Fences follow
CommonMark: three or more backticks or tildes, indented at most three spaces; a backtick fence's
info string holds no backtick; a closing fence uses the same character, at least as many, and
nothing but spaces after it. Fence runs longer than MAX_FENCE_RUN are read as text, which keeps
a reopened fence small enough to fit any limit of at least MIN_LIMIT.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MIN_LIMIT = 100
MAX_FENCE_RUN = 16
MAX_LANGUAGE = 20  # a longer "language" is not reopened (it would eat the message)

_OPEN = re.compile(r" {0,3}(`{3,}|~{3,})([^\n]*)")
# Where a continuation must not start: it would read as a fence in the next chunk.
_FENCE_START = re.compile(r" {0,3}(`{3}|~{3})")


@dataclass(frozen=True, slots=True)
class Fence:
    """An open code block: its fence run (``` or ~~~~ …) and the language it was opened with."""

    run: str
    language: str

    def reopen(self) -> str:
        return f"{self.run}{self.language}\n"

    def close(self) -> str:
        return self.run


@dataclass(frozen=True, slots=True)
class Chunk:
    """One message: `prefix` reopens a fence, `body` is a slice of the input, `suffix` closes."""

    prefix: str
    body: str
    suffix: str

    @property
    def text(self) -> str:
        return self.prefix + self.body + self.suffix


def fence_after_line(state: Fence | None, line: str) -> Fence | None:
    """The code-block state after one line (without its line break)."""
    line = line.rstrip("\r")
    if state is None:
        match = _OPEN.fullmatch(line)
        if not match or len(match.group(1)) > MAX_FENCE_RUN:
            return None
        run, info = match.group(1), match.group(2)
        if run[0] == "`" and "`" in info:
            return None  # CommonMark: `​``a`b` is inline code, not a fence
        words = info.split()
        language = words[0] if words and len(words[0]) <= MAX_LANGUAGE else ""
        return Fence(run, language)
    stripped = line.rstrip(" \t")
    indent = len(stripped) - len(stripped.lstrip(" "))
    closer = stripped.lstrip(" ")
    if (
        indent <= 3
        and len(closer) >= len(state.run)
        and len(closer) <= MAX_FENCE_RUN
        and closer == state.run[0] * len(closer)
    ):
        return None
    return state


def fence_after(state: Fence | None, text: str) -> Fence | None:
    """The code-block state after `text`, starting in `state`; a last partial line counts."""
    for line in text.split("\n"):
        state = fence_after_line(state, line)
    return state


def _suffix_for(state: Fence | None, body: str) -> str:
    if state is None:
        return ""
    return state.close() if body.endswith("\n") or not body else "\n" + state.close()


def chunk_markdown(text: str, limit: int) -> list[Chunk]:
    """Split `text` into chunks whose `.text` is at most `limit` code points (see module rules)."""
    if limit < MIN_LIMIT:
        raise ValueError(f"limit {limit} is below the chunker's minimum of {MIN_LIMIT}")
    chunks: list[Chunk] = []
    start, state = 0, None
    while start < len(text):
        prefix = state.reopen() if state else ""
        end = _choose_end(text, start, state, limit - len(prefix))
        body = text[start:end]
        state = fence_after(state, body)
        chunks.append(Chunk(prefix, body, _suffix_for(state, body)))
        start = end
    return chunks


def split_markdown(text: str, limit: int) -> list[str]:
    """The chunks' texts, ready to send."""
    return [chunk.text for chunk in chunk_markdown(text, limit)]


def _choose_end(text: str, start: int, state: Fence | None, budget: int) -> int:
    """Where the chunk that begins at `start` (in code-block `state`) ends."""
    best: dict[str, int] = {}  # kind → the furthest cut of that kind that fits
    cursor = start
    while cursor < len(text):
        newline = text.find("\n", cursor)
        line_end = len(text) if newline == -1 else newline + 1
        line = text[cursor:line_end]
        after = fence_after_line(state, line.rstrip("\n"))
        body_len = line_end - start
        closing = 0 if after is None else len(after.close()) + (0 if line.endswith("\n") else 1)
        if body_len + closing > budget:
            break
        if line_end == len(text):
            return line_end
        if after is None and (line.strip() == "" or state is not None):
            best["paragraph"] = line_end  # after a blank line, or right after a closing fence
        elif after is None:
            best["line"] = line_end
        else:
            best["code line"] = line_end
        state, cursor = after, line_end
    # Prefer the nicest boundary that still fills a third of the message (no confetti).
    floor = start + budget // 3
    for kind in ("paragraph", "line", "code line"):
        if best.get(kind, 0) >= floor:
            return best[kind]
    if best:
        return max(best.values())
    return _cut_inside_line(text, start, budget)


def _cut_inside_line(text: str, start: int, budget: int) -> int:
    """A cut inside the over-long line that begins at `start` (rule 4)."""
    room = budget - (MAX_FENCE_RUN + 1)  # space for a closing fence if the piece opens one
    hard = start + room
    cut = hard
    # Prefer just after a space in the last quarter of the room.
    space = text.rfind(" ", start + room * 3 // 4, hard)
    if space != -1:
        cut = space + 1
    # Never let the continuation start like a fence, nor the piece end as a bare fence run:
    # either would change which lines are code in the next chunk.
    for _ in range(64):  # bounded: a line of 40,000 backticks must not cost 40,000² steps
        if not (_FENCE_START.match(text, cut) or _looks_like_fence(text[start:cut])):
            return cut
        cut -= 1
        if cut <= start:
            break
    return hard


def _looks_like_fence(piece: str) -> bool:
    line = piece[piece.rfind("\n") + 1 :]
    return _OPEN.fullmatch(line.rstrip()) is not None
