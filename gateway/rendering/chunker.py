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

Speed (issue 7 §5, bench/render.py: 100 KB in well under a millisecond): only a line whose
first non-space character (within three spaces) is a backtick or a tilde can open or close a
block, so one regex search finds those lines and the fence rules run on them alone. The lines
between two of them share one state, so where a chunk may end among them is found with
`str.rfind` (and a regex for blank lines), not line by line in Python. The cut is chosen
together with the code-block state there, so no body is scanned a second time.

Hidden text (moved here from gateway.rendering.chunker: it is split the same way).
Text the reader chooses to reveal: Discord-style spoilers (G-NS-16).

A spoiler is `||text||`. A `||` inside the text would end it early and show the rest, so each
`|` that is followed by another gets a zero-width space after it: the reader sees the same
characters and nothing escapes the spoiler. Long text is split with the markdown chunker first,
so each message is its own balanced spoiler within the platform limit.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass

MIN_LIMIT = 100
MAX_FENCE_RUN = 16
MAX_LANGUAGE = 20  # a longer "language" is not reopened (it would eat the message)

_OPEN = re.compile(r" {0,3}(`{3,}|~{3,})([^\n]*)")
# Where a continuation must not start: it would read as a fence in the next chunk.
_FENCE_START = re.compile(r" {0,3}(`{3}|~{3})")
# The lines that can open or close a code block; every other line leaves the state as it is.
_MAYBE_FENCE = re.compile(r" {0,3}[`~]")
# Searched from the line break before: far faster than a MULTILINE `^` over a whole message.
_MAYBE_FENCE_AFTER = re.compile(r"\n {0,3}[`~]")
# The line break before a line of white space only (a paragraph boundary).
_BEFORE_BLANK = re.compile(r"\n(?=[^\S\n]*\n)")
# A character reference (Slack's escapes, adapters.slack.mrkdwn): a cut inside one garbles it.
_ENTITY = re.compile(r"&(?:amp|lt|gt);")


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
    if not _MAYBE_FENCE.match(line):
        return state  # neither an opener nor a closer: no regex, no copies
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
    for begin in _fence_lines(text):  # the other lines cannot change it
        newline = text.find("\n", begin)
        state = fence_after_line(state, text[begin : len(text) if newline == -1 else newline])
    return state


def _fence_lines(text: str) -> list[int]:
    """The starts of the lines of `text` that may be fences, ascending."""
    starts = [found.start() + 1 for found in _MAYBE_FENCE_AFTER.finditer(text)]
    return [0, *starts] if _MAYBE_FENCE.match(text) else starts


def _suffix_for(state: Fence | None, body: str) -> str:
    if state is None:
        return ""
    return state.close() if body.endswith("\n") or not body else "\n" + state.close()


def chunk_markdown(text: str, limit: int) -> list[Chunk]:
    """Split `text` into chunks whose `.text` is at most `limit` code points (see module rules)."""
    if limit < MIN_LIMIT:
        raise ValueError(f"limit {limit} is below the chunker's minimum of {MIN_LIMIT}")
    chunks: list[Chunk] = []
    fences = _fence_lines(text)
    start, state = 0, None
    while start < len(text):
        prefix = state.reopen() if state else ""
        end, state = _choose_end(text, start, state, limit - len(prefix), fences)
        body = text[start:end]
        chunks.append(Chunk(prefix, body, _suffix_for(state, body)))
        start = end
    return chunks


def split_markdown(text: str, limit: int) -> list[str]:
    """The chunks' texts, ready to send."""
    return [chunk.text for chunk in chunk_markdown(text, limit)]


def _choose_end(
    text: str, start: int, state: Fence | None, budget: int, fences: list[int]
) -> tuple[int, Fence | None]:
    """Where the chunk that begins at `start` (in code-block `state`) ends, and the state there.

    `fences` are the starts of the lines that may be fences (ascending). Those lines, and the
    first one (`start` may lie inside a line, after a rule-4 cut), are read one by one; the
    lines between two of them share one state, so each such run is measured with `str.rfind`
    instead of line by line.
    """
    size = len(text)
    if size - start + MAX_FENCE_RUN + 1 <= budget:
        # The rest fits even with the longest closing fence: no cut to choose, only the state.
        return size, fence_after(state, text[start:])
    cuts = _Cuts()
    stop = start + budget  # no line may end after this, whatever the state
    cursor = start
    after_fence = bisect_left(fences, start)
    while cursor < size:
        if cursor == start or (after_fence < len(fences) and fences[after_fence] == cursor):
            # One line that may change the state: the rules of fence_after_line.
            if after_fence < len(fences) and fences[after_fence] == cursor:
                after_fence += 1
            line = _fence_line(text, cursor, state, stop, cuts)
            if line is None:
                break
            line_end, after = line
            if line_end == size:
                return line_end, after
            state, cursor = after, line_end
            continue
        # A run of lines none of which is a fence: `state` holds for all of them.
        run_end = fences[after_fence] if after_fence < len(fences) else size
        closing = len(state.close()) if state is not None else 0
        fit = stop - closing  # the furthest end of a whole line that fits in this state
        # A last line without a line break needs one more before its closing fence.
        unended = state is not None and run_end == size and not text.endswith("\n")
        if run_end + unended <= fit:
            if run_end == size:
                return size, state
            last = run_end  # every line of the run fits (a fence line starts at run_end)
        else:
            newline = text.rfind("\n", cursor, min(fit, run_end))
            last = newline + 1 if newline != -1 else 0
        if last:
            if state is not None:
                cuts.code, cuts.code_state = last, state
            else:
                cuts.prose(text, cursor, last)
        if last != run_end:
            break
        cursor = run_end
    return cuts.choose(text, start, state, budget)


def _fence_line(
    text: str, cursor: int, state: Fence | None, stop: int, cuts: _Cuts
) -> tuple[int, Fence | None] | None:
    """Read the one line at `cursor` that may change the state (the rules of
    fence_after_line): where it ends and the state after it, with the cut after it recorded;
    None when it does not fit before `stop` (with the closing fence its state would need)."""
    size = len(text)
    newline = text.find("\n", cursor)
    line_end = size if newline == -1 else newline + 1
    if line_end > stop:
        return None
    after = fence_after_line(state, text[cursor : line_end - (newline != -1)])
    if after is not None and line_end + len(after.close()) + (newline == -1) > stop:
        return None
    if line_end == size:
        return line_end, after
    if after is not None:
        cuts.code, cuts.code_state = line_end, after
    elif state is not None or _blank(text, cursor, line_end):
        cuts.paragraph = line_end  # after a blank line, or right after a closing fence
    else:
        cuts.line = line_end
    return line_end, after


class _Cuts:
    """The furthest cut of each kind that fits so far (0: none yet), and choosing among them."""

    __slots__ = ("code", "code_state", "line", "paragraph")

    def __init__(self) -> None:
        self.paragraph = self.line = self.code = 0
        self.code_state: Fence | None = None  # the open block at `code`

    def prose(self, text: str, begin: int, end: int) -> None:
        """Record the whole lines text[begin:end] (outside code, `begin` just after a line
        break): blank ones end a paragraph, the others a line."""
        blanks = list(_BEFORE_BLANK.finditer(text, begin - 1, end))
        if not blanks:
            self.line = end
            return
        blank = blanks[-1]
        blank_end = text.find("\n", blank.end()) + 1
        self.paragraph = blank_end
        if blank_end != end:
            self.line = end  # the last line is not blank
            return
        # The last line is blank: the furthest other one ends where the blank lines begin.
        line_end = blank.end()
        while line_end > begin:
            line_start = max(begin, text.rfind("\n", begin, line_end - 1) + 1)
            if not _blank(text, line_start, line_end):
                self.line = line_end
                return
            line_end = line_start

    def choose(self, text: str, start: int, state: Fence | None, budget: int):
        # Prefer the nicest boundary that still fills a third of the message (no confetti).
        floor = start + budget // 3
        if self.paragraph >= floor:
            return self.paragraph, None
        if self.line >= floor:
            return self.line, None
        if self.code >= floor:
            return self.code, self.code_state
        best = max(self.paragraph, self.line, self.code)
        if best:
            return best, self.code_state if best == self.code else None
        end = _cut_inside_line(text, start, budget)
        return end, fence_after(state, text[start:end])


def _blank(text: str, begin: int, end: int) -> bool:
    """Whether the line text[begin:end] is only white space, copying it only when it may be."""
    first = text[begin]
    if first == "\n":
        return True
    return first.isspace() and not text[begin:end].strip()


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
    # either would change which lines are code in the next chunk. Nor cut inside `&amp;`,
    # `&lt;`, `&gt;`: Slack's blocks are chunked after escaping (adapters.slack.mrkdwn).
    for _ in range(64):  # bounded: a line of 40,000 backticks must not cost 40,000² steps
        if not (
            _FENCE_START.match(text, cut)
            or _looks_like_fence(text[start:cut])
            or _inside_entity(text, start, cut)
        ):
            return cut
        cut -= 1
        if cut <= start:
            break
    return hard


def _inside_entity(text: str, start: int, cut: int) -> bool:
    amp = text.rfind("&", max(start, cut - 4), cut)
    entity = _ENTITY.match(text, amp) if amp != -1 else None
    return entity is not None and entity.end() > cut


def _looks_like_fence(piece: str) -> bool:
    line = piece[piece.rfind("\n") + 1 :]
    return _OPEN.fullmatch(line.rstrip()) is not None


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
