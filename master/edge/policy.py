"""The edge security filter (RAWP §9.4.2, E-WS-09, X-SEC-05; decision A-24).

A `control.prompt.request` may ask for built-in tools through `tool_overrides` and may be a
slash command (`input_type: "slash_command"`, `prompt_text` starting `/name`). The operator
denies tools and commands by name (case-insensitive); `*` denies every tool override. A prompt
that asks for anything denied is dropped at the master — it never reaches the client — and the
sending edge gets `session.error` `PROMPT_REJECTED_BY_POLICY` naming what was refused.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from rawp.events import PromptRequest

REJECTED = "PROMPT_REJECTED_BY_POLICY"


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    reason: str = ""


ALLOW = Verdict(True)


class SecurityPolicy:
    def __init__(self, deny_tools: Iterable[str] = (), deny_commands: Iterable[str] = ()) -> None:
        self.deny_tools = frozenset(t.strip().lower() for t in deny_tools if t.strip())
        self.deny_commands = frozenset(
            c.strip().lstrip("/").lower() for c in deny_commands if c.strip()
        )

    def check(self, prompt: PromptRequest) -> Verdict:
        for tool in prompt.tool_overrides or ():
            if "*" in self.deny_tools or tool.strip().lower() in self.deny_tools:
                return Verdict(False, f"the tool {tool!r} may not be enabled from an edge")
        command = slash_command(prompt)
        if command is not None and command.lower() in self.deny_commands:
            return Verdict(False, f"the slash command /{command} is not allowed from an edge")
        return ALLOW


def slash_command(prompt: PromptRequest) -> str | None:
    """The command name of a slash-command prompt (`/review main` → `review`), else None."""
    if prompt.input_type != "slash_command":
        return None
    first = prompt.prompt_text.strip().split(maxsplit=1)
    if not first or not first[0].startswith("/"):
        return None
    return first[0][1:]
