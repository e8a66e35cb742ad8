"""Agent modes (issue 30 §1): what an agent offers for `control.mode.set`, and how a
requested mode is matched to one of them.

A kind that has modes answers `Agent.modes()` with a `Modes` and changes them in
`Agent.set_mode`; a request it cannot honour raises `ModeRefused`, which the session's
socket turns into `session.error` with the refusal's code and message (never silence).

Edges send the Claude Code ids (`default`, `acceptEdits`, `plan`) whatever the kind, so an
ACP agent's mode is matched by id first and then by name with case, spaces and punctuation
ignored: `acceptEdits` finds an ACP mode named "Accept Edits", `default` one with id `default`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rawp.events import ModeOption

# Claude Code's permission modes that chat may choose. `bypassPermissions` is offered only
# when the agents file already starts the CLI in it: chat never widens what the owner allowed.
CLAUDE_MODES = (
    ModeOption(id="default", name="Ask before edits"),
    ModeOption(id="acceptEdits", name="Accept edits"),
    ModeOption(id="plan", name="Plan"),
)
CLAUDE_BYPASS = ModeOption(id="bypassPermissions", name="Bypass permissions")


class ModeRefused(Exception):
    """A `control.mode.set` the agent cannot honour: `code` and `message` go to the edge."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Modes:
    available: tuple[ModeOption, ...]
    current: str

    def resolve(self, requested: str) -> str:
        """The id of the offered mode `requested` names; ModeRefused when none does."""
        for mode in self.available:
            if mode.id == requested:
                return mode.id
        wanted = _plain(requested)
        for mode in self.available:
            if wanted and wanted in (_plain(mode.id), _plain(mode.name)):
                return mode.id
        offered = ", ".join(mode.id for mode in self.available)
        raise ModeRefused(
            "INVALID_MODE", f"unknown mode {requested!r}; this agent offers {offered}"
        )


def no_modes(what: str) -> ModeRefused:
    return ModeRefused("UNSUPPORTED_CONTROL", f"{what} has no modes to choose from")


def _plain(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())
