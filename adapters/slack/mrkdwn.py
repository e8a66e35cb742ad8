"""The renderer's markdown as Slack `mrkdwn` section blocks (3,000 characters each, A-35).

Slack's mrkdwn is not Markdown: bold is `*b*`, strike `~s~`, links `<url|text>`, code fences
take no language, and `&`, `<`, `>` must be escaped everywhere (Slack shows `&lt;` as `<`).
Conversion applies only outside code; code keeps every character (escaped), its fence loses
the language tag (Slack would show it as a first line) and a backtick triple inside it is
broken with a zero-width space so it cannot close the block early.

A message is converted first and its mrkdwn then split once with the gateway's chunker, so
each block is measured as Slack will count it (≤ 3,000, fences balanced per block) and nothing
is split twice. The converted text's fences are bare ``` lines and a code line holds no ```
(broken with the zero-width space), so the chunker reads the same code blocks Slack will.

Speed (issue 7 §5, bench/render.py): conversion works on whole runs of lines between fences,
not line by line; none of its patterns crosses a line break, so the result is the same.
"""

from __future__ import annotations

import re

from gateway.rendering.chunker import split_markdown

MAX_BLOCK = 3000  # characters of text per section block
MAX_BLOCKS = 50  # blocks per message
ZWSP = "\u200b"

# Lines are found from the line break before them (to_mrkdwn puts one before the first line):
# a MULTILINE `^` makes the regex engine try every position, several times slower.
_FENCE = re.compile(r"\n( {0,3})(`{3,}|~{3,})([^\n]*)")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
_ITALIC = re.compile(r"(?<![*\w])\*(?![*\s])(.+?)(?<![*\s])\*(?![*\w])")
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*|__(?=\S)(.+?)(?<=\S)__")
_STRIKE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")
_LINK = re.compile(r"\[([^\]\n]+)\]\(([^)\s]+)\)")
_HEADING = re.compile(r"\n#{1,6} +([^\n]+?) *#*(?![^\n])")


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


def _prose(text: str) -> str:
    """Lines outside code, after a line break: headings become bold, then styling outside code
    spans."""
    if "#" in text:
        text = _HEADING.sub(r"\n**\1**", text)
    if "`" not in text:
        return _styled(escape(text))
    out, cursor = [], 0
    for span in _CODE_SPAN.finditer(text):
        out.append(_styled(escape(text[cursor : span.start()])))
        out.append("`" + escape(span.group(2)) + "`")
        cursor = span.end()
    out.append(_styled(escape(text[cursor:])))
    return "".join(out)


def _code(text: str) -> str:
    """Lines inside a code block: every character kept, escaped; no ``` to close it early."""
    return escape(text).replace("```", "``" + ZWSP + "`")


def to_mrkdwn(markdown: str) -> str:
    """The whole text converted; code blocks are found first, the runs of lines between their
    fences are converted whole (each begins with the line break before its first line)."""
    text = "\n" + markdown  # so that every line, the first too, follows a line break
    out: list[str] = []
    fence: str | None = None  # the opening run while inside a code block
    cursor = 0  # where the lines not yet converted begin (at a line break)
    for match in _FENCE.finditer(text):
        line = match.start() + 1  # the fence line, after its line break
        if fence is None:
            out += [_prose(text[cursor:line]), "```"]  # the language is dropped
            fence, cursor = match.group(2), match.end()
        elif _closes(fence, match):
            out += [_code(text[cursor:line]), "```"]
            fence, cursor = None, match.end()
        # any other fence-like line inside a block is code (escaped with the rest)
    out.append((_prose if fence is None else _code)(text[cursor:]))
    return "".join(out)[1:]


def _closes(fence: str, match: re.Match[str]) -> bool:
    run = match.group(2)
    return run[0] == fence[0] and len(run) >= len(fence) and not match.group(3).strip()


def block_texts(markdown: str, limit: int = MAX_BLOCK) -> list[str]:
    """mrkdwn pieces of at most `limit` (≥ the chunker's MIN_LIMIT) characters, each with
    balanced fences; pieces of white space only are left out."""
    return [piece for piece in split_markdown(to_mrkdwn(markdown), limit) if piece.strip()]


def section(text: str) -> dict:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def messages_of(markdown: str) -> list[list[dict]]:
    """Section blocks for one renderer message, in messages of at most 50 blocks."""
    blocks = [section(text) for text in block_texts(markdown)]
    return [blocks[i : i + MAX_BLOCKS] for i in range(0, len(blocks), MAX_BLOCKS)] or [[]]
