"""The renderer's markdown as Slack `mrkdwn` section blocks (3,000 characters each, A-35).

Slack's mrkdwn is not Markdown: bold is `*b*`, strike `~s~`, links `<url|text>`, code fences
take no language, and `&`, `<`, `>` must be escaped everywhere (Slack shows `&lt;` as `<`).
Conversion applies only outside code; code keeps every character (escaped), its fence loses
the language tag (Slack would show it as a first line) and a backtick triple inside it is
broken with a zero-width space so it cannot close the block early.

A message is split with the gateway's chunker *before* conversion, so each block is a
fence-balanced piece; a piece that escaping pushed over the limit is split again, smaller.
"""

from __future__ import annotations

import re

from gateway.chunker import split_markdown

MAX_BLOCK = 3000  # characters of text per section block
MAX_BLOCKS = 50  # blocks per message
ZWSP = "\u200b"

_FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
_ITALIC = re.compile(r"(?<![*\w])\*(?![*\s])(.+?)(?<![*\s])\*(?![*\w])")
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*|__(?=\S)(.+?)(?<=\S)__")
_STRIKE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")
_LINK = re.compile(r"\[([^\]\n]+)\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6} +(.+?) *#*$")


def escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def unescape(text: str) -> str:
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


_SLACK_REF = re.compile(r"<([@#!])([^|>]+)(?:\|([^>]*))?>|<([^|>]+)(?:\|([^>]*))?>")


def from_slack_text(text: str) -> str:
    """What a user typed, from Slack's message `text`: Slack escapes `&`, `<`, `>` and writes
    mentions and links as `<@U1>`, `<#C1|name>`, `<!here>`, `<https://x|label>`.

    Mentions become `@id` / `#name` / `@here`; a link its URL (with its label when the user gave
    one); then the entities are decoded, so the prompt escapes what the user really typed.
    """

    def plain(match: re.Match[str]) -> str:
        sigil, target, label, url, url_label = match.groups()
        if sigil == "@":
            return "@" + (label or target)
        if sigil == "#":
            return "#" + (label or target)
        if sigil == "!":
            return label or "@" + target.split("^")[0]
        url = url.removeprefix("mailto:")
        return url if not url_label or url_label == url else f"{url_label} ({url})"

    return unescape(_SLACK_REF.sub(plain, text))


def _styled(text: str) -> str:
    """Markdown emphasis and links → mrkdwn, on already escaped text without code spans."""
    text = _ITALIC.sub(r"_\1_", text)
    text = _BOLD.sub(lambda m: f"*{m.group(1) or m.group(2)}*", text)
    text = _STRIKE.sub(r"~\1~", text)
    return _LINK.sub(lambda m: f"<{m.group(2)}|{m.group(1)}>", text)


def _inline(line: str) -> str:
    heading = _HEADING.match(line)
    if heading:
        line = f"**{heading.group(1)}**"
    out, cursor = [], 0
    for span in _CODE_SPAN.finditer(line):
        out.append(_styled(escape(line[cursor : span.start()])))
        out.append("`" + escape(span.group(2)) + "`")
        cursor = span.end()
    out.append(_styled(escape(line[cursor:])))
    return "".join(out)


def to_mrkdwn(markdown: str) -> str:
    out: list[str] = []
    fence: str | None = None  # the opening run while inside a code block
    for line in markdown.split("\n"):
        match = _FENCE.match(line)
        if fence is None and match:
            fence = match.group(2)
            out.append("```")  # the language is dropped: Slack would print it
        elif fence is not None and match and _closes(fence, match):
            fence = None
            out.append("```")
        elif fence is not None:
            out.append(escape(line).replace("```", "``" + ZWSP + "`"))
        else:
            out.append(_inline(line))
    return "\n".join(out)


def _closes(fence: str, match: re.Match[str]) -> bool:
    run = match.group(2)
    return run[0] == fence[0] and len(run) >= len(fence) and not match.group(3).strip()


MIN_LIMIT = 500  # escaping grows text at most 5× (`&` → `&amp;`), the chunker needs ≥ 100


def block_texts(markdown: str, limit: int = MAX_BLOCK) -> list[str]:
    """mrkdwn pieces of at most `limit` (≥ 500) characters, each with balanced fences."""
    if limit < MIN_LIMIT:
        raise ValueError(f"a block limit below {MIN_LIMIT} cannot absorb escaping")
    return _block_texts(markdown, limit)


def _block_texts(markdown: str, limit: int) -> list[str]:
    pieces = []
    for piece in split_markdown(markdown, limit):
        converted = to_mrkdwn(piece)
        if len(converted) <= limit:
            pieces.append(converted)
        else:  # escaping made it longer: split this piece again, proportionally smaller
            # A 100-character piece escapes to at most 500, so this ends within MIN_LIMIT.
            smaller = max(100, limit * len(piece) // len(converted) - 16)
            pieces.extend(_block_texts(piece, smaller) if smaller < limit else [converted])
    return [p for p in pieces if p.strip()]


def section(text: str) -> dict:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def messages_of(markdown: str) -> list[list[dict]]:
    """Section blocks for one renderer message, in messages of at most 50 blocks."""
    blocks = [section(text) for text in block_texts(markdown)]
    return [blocks[i : i + MAX_BLOCKS] for i in range(0, len(blocks), MAX_BLOCKS)] or [[]]
