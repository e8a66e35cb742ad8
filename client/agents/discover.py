"""Known agent CLIs, offered without an agents file when their program is on PATH (issue 28 §5).

A newcomer who has Claude Code installed expects `rawp up --agent claude` to run it. Without an
agents file the client therefore offers, beside `demo`, each agent of `KNOWN_AGENTS` whose
program it finds on PATH. Each is offered as the agents-file table it stands for
(`entry_table`), read by the same `kind_settings` as a file's tables: the same defaults, the
same checks, nothing parallel. RAWP §7.2 (X-SEC-02) holds: the argv is this module's, never
anything from the network, and only the program found at start is run.

PATH is read as a shell would, except that relative entries (`.`, an empty entry) are skipped:
a workspace holding a file named `claude` must not become the agent. The program's absolute
path is what runs, so a PATH changed later does not change it.

`resolve_name` turns what a user types (`--agent claude`, the agent's name, its kind) into the
name of an offered agent; `unknown_agent` says, in one message, what is available and how to
add another. docs/agents.md ("Agents found on PATH") is the user's description.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

CLAUDE_INSTALL = "npm install -g @anthropic-ai/claude-code"


@dataclass(frozen=True)
class KnownAgent:
    name: str  # the agent's name when offered (`agent_name`, GET /v1/agents)
    kind: str
    program: str  # looked for on PATH
    args: tuple[str, ...]  # what follows the program in its argv
    title: str
    install: str  # how to install it, said where it is missing
    aliases: tuple[str, ...] = ()  # other names `--agent` accepts for it


# The commands are the projects' own ACP entry points (their docs and Zed's agent servers).
KNOWN_AGENTS: tuple[KnownAgent, ...] = (
    KnownAgent(
        "claude-code", "claude-code", "claude", (), "Claude Code", CLAUDE_INSTALL, ("claude",)
    ),
    KnownAgent(
        "gemini",
        "acp",
        "gemini",
        # `--acp` in recent releases; the older spelling is still accepted by them (deprecated)
        # and is the only one older releases know.
        ("--experimental-acp",),
        "Gemini CLI",
        "npm install -g @google/gemini-cli",
        ("gemini-cli",),
    ),
    KnownAgent(
        "claude-code-acp",
        "acp",
        "claude-code-acp",
        (),
        "Claude Code through Zed's ACP adapter",
        "npm install -g @zed-industries/claude-code-acp",
    ),
    KnownAgent(
        "codex-acp",
        "acp",
        "codex-acp",
        (),
        "Codex through Zed's ACP adapter",
        "npm install -g @zed-industries/codex-acp",
        ("codex",),
    ),
    KnownAgent("opencode", "acp", "opencode", ("acp",), "OpenCode", "npm install -g opencode-ai"),
)
INSTALL_HINTS = {known.program: known.install for known in KNOWN_AGENTS}


def find_program(program: str, path: str | None = None) -> str | None:
    """The absolute path of `program` in the absolute directories of PATH, or None."""
    search = os.environ.get("PATH", "") if path is None else path
    for folder in search.split(os.pathsep):
        if not folder or not os.path.isabs(folder):
            continue  # `.` or an empty entry would make the workspace's files agents
        candidate = Path(folder) / program
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def entry_table(known: KnownAgent, program_path: str) -> dict[str, Any]:
    """The `[agents.NAME]` table a discovered agent stands for, as a user would write it."""
    table: dict[str, Any] = {
        "kind": known.kind,
        "command": [program_path, *known.args],
        "description": f"{known.title} ({known.program} found on PATH)",
    }
    if known.kind == "acp":
        table["install_hint"] = known.install
    return table


def discovered(path: str | None = None) -> list[tuple[KnownAgent, dict[str, Any]]]:
    """The known agents whose program is on PATH, in `KNOWN_AGENTS` order, with their tables."""
    found = []
    for known in KNOWN_AGENTS:
        program_path = find_program(known.program, path)
        if program_path is not None:
            found.append((known, entry_table(known, program_path)))
    return found


class Offered(Protocol):
    name: str
    kind: str
    is_active: bool


def resolve_name(wanted: str, agents: Mapping[str, Offered]) -> str | None:
    """The offered agent `wanted` means: its name, a known alias (`claude` → `claude-code`),
    or a kind's name when exactly one active agent is of that kind."""
    if wanted in agents:
        return wanted
    for known in KNOWN_AGENTS:
        if wanted in known.aliases and known.name in agents:
            return known.name
    of_kind = [a.name for a in agents.values() if a.kind == wanted and a.is_active]
    return of_kind[0] if len(of_kind) == 1 else None


def unknown_agent(wanted: str, agents: Mapping[str, Offered], agents_file: Path | None) -> str:
    """One message: `wanted` is not offered, what is, and how to add an agent."""
    active = [a.name for a in agents.values() if a.is_active]
    if wanted in agents:
        head = f"agent {wanted!r} is switched off (active = false in {agents_file})"
    elif agents_file is not None:
        head = f"no agent {wanted!r} in the agents file {agents_file}"
    else:
        head = f"no agent {wanted!r} here"
    listed = ", ".join(_with_aliases(name) for name in active) or "none"
    if agents_file is not None:
        how = f"add an [agents.{wanted}] table to {agents_file} (docs/agents.md)"
    else:
        missing = [k.program for k in KNOWN_AGENTS if k.name not in agents]
        how = (
            "install a known agent CLI and it is offered when found on PATH"
            + (f" ({', '.join(missing)})" if missing else "")
            + ", or name any program in an agents file and pass --agents-file (docs/agents.md)"
        )
    return f"{head}; available: {listed}. To add one: {how}"


def _with_aliases(name: str) -> str:
    for known in KNOWN_AGENTS:
        if known.name == name and known.aliases:
            return f"{name} (or {', '.join(known.aliases)})"
    return name
