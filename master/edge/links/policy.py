"""The edge security filter (RAWP §9.4.2, E-WS-09, X-SEC-05; decisions A-24, A-40).

A `control.prompt.request` may ask for built-in tools through `tool_overrides` and may carry a
command (`/name args`). The operator denies tools and commands by name (case-insensitive); `*`
denies every tool override. A prompt that asks for anything denied is dropped at the master —
it never reaches the client — and the sending edge gets `session.error`
`PROMPT_REJECTED_BY_POLICY` naming what was refused.

One meaning of "command" (issue 15 §2): what an agent would run as a command is checked as a
command, whatever `input_type` carried it. Claude Code (and the ACP adapter in front of it)
reads a message as a command when its text, JS-`trim()`med, starts with `/`; ACP agents read
prompt text starting with `/` the same way; a script sees `RAWP_PROMPT` and may do as it
likes. So `command_names` reads every prompt, `text` included, as the most generous of those
readers would, and a little more: leading whitespace of any script, zero-width and other
format characters, control characters, repeated slashes, compatibility forms (a fullwidth
`／`), file-reference tokens written out as their `display_path` (how the kinds pass them), and
the namespaced forms agents resolve (`plugin:name`, `mcp:server:name`, `/name sub` run as
`name:sub`). Stricter than any agent is the safe side: a typed `/deploy` refused as text is a
nuisance, one run as a command is the hole. docs/agents.md says, per kind, why this suffices.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from rawp.events import PromptRequest
from rawp.fileref import parse, to_literal

REJECTED = "PROMPT_REJECTED_BY_POLICY"
# Characters no agent shows as text but some skip before a command, or that hide one from a
# human reading the chat: separators, controls, format characters (ZWSP, ZWJ, BOM, bidi marks).
INVISIBLE = frozenset(("Zs", "Zl", "Zp", "Cc", "Cf"))
TRAILING = ".,;:!?"  # "/deploy." — no agent we know runs it; refusing it costs nothing


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    reason: str = ""


ALLOW = Verdict(True)


class SecurityPolicy:
    def __init__(self, deny_tools: Iterable[str] = (), deny_commands: Iterable[str] = ()) -> None:
        self.deny_tools = frozenset(t.strip().lower() for t in deny_tools if t.strip())
        self.deny_commands = frozenset(
            _fold(c.strip().lstrip("/")) for c in deny_commands if c.strip().lstrip("/")
        )

    def check(self, prompt: PromptRequest) -> Verdict:
        for tool in prompt.tool_overrides or ():
            if "*" in self.deny_tools or tool.strip().lower() in self.deny_tools:
                return Verdict(False, f"the tool {tool!r} may not be enabled from an edge")
        if self.deny_commands:
            for name in command_names(prompt):
                if name in self.deny_commands:
                    return Verdict(False, f"the slash command /{name} is not allowed from an edge")
        return ALLOW


def slash_command(prompt: PromptRequest) -> str | None:
    """The command name as typed (`/review main` → `review`), whatever the `input_type`, or
    None when no agent would read the prompt as a command. Read wide, as a deny list should:
    slashes and then whitespace still name the next word (`// deploy` → `deploy`)."""
    for text in _readings(prompt):
        heads = _command_heads(text)
        if heads:
            return heads[0][0]
    return None


def command_names(prompt: PromptRequest) -> set[str]:
    """Every name, case-folded, under which some agent could run this prompt as a command."""
    names: set[str] = set()
    for text in _readings(prompt):
        for name, first_arg in _command_heads(text):
            for form in {_fold(name), _fold(name).rstrip(TRAILING)}:
                parts = form.split(":")
                # `plugin:deploy`, `mcp:server:deploy` run `deploy` of a plugin or a server.
                names.update(":".join(parts[i:]) for i in range(len(parts)))
                if first_arg:  # Claude Code runs `/deploy prod` as the command `deploy:prod`
                    names.add(f"{form}:{_fold(first_arg)}")
    names.discard("")
    return names


def _readings(prompt: PromptRequest) -> list[str]:
    """The prompt's text as each kind may pass it: as sent, and with file tokens written as
    their `display_path` (claude-code, acp, script), each also in NFKC form."""
    texts = [prompt.prompt_text, to_literal(parse(prompt.prompt_text, prompt.file_references))]
    texts += [unicodedata.normalize("NFKC", t) for t in texts]
    return list(dict.fromkeys(texts))


def _command_heads(text: str) -> list[tuple[str, str]]:
    """(name, first argument) of `/name arg …` after invisible characters, split two ways:
    at whitespace (Python's, a superset of JS `\\s` but for U+FEFF) and at any invisible
    character (JS `\\s` counts U+FEFF). Empty when no agent reads a command here."""
    i = 0
    while i < len(text) and _invisible(text[i]):
        i += 1
    if not text.startswith("/", i):
        return []
    rest = text[i:].lstrip("/")
    heads = []
    for words in (rest.split(maxsplit=2), _split_invisible(rest)):
        if words and words[0]:
            heads.append((words[0], words[1] if len(words) > 1 else ""))
    return heads


def _split_invisible(text: str) -> list[str]:
    words, word = [], []
    for c in text:
        if _invisible(c):
            if word:
                words.append("".join(word))
                word = []
                if len(words) == 2:
                    return words
        else:
            word.append(c)
    if word:
        words.append("".join(word))
    return words


def _invisible(c: str) -> bool:
    return c.isspace() or unicodedata.category(c) in INVISIBLE


def _fold(name: str) -> str:
    """A name compared without case or invisible characters (`De\u200bploy` → `deploy`)."""
    visible = "".join(c for c in name if unicodedata.category(c) not in INVISIBLE)
    return visible.casefold()
