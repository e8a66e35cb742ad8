"""`rawp doctor`'s look at this machine's agents: can each configured agent start here?

The agents file loads (the same reader `rawp client` uses), and for each active agent the
program it runs is found: the first word of its `command` on PATH (or the path itself), with
`claude` as Claude Code's default; an `openai` agent needs no program, but the environment
variable named in `api_key_env` must hold the key. Answers plain (ok, what, fix) triples:
the client imports nothing of the command that prints them (tests/test_layout.py).
"""

from __future__ import annotations

import os
import shlex
import shutil
from pathlib import Path

from client.agents import AgentsFileError, load_agents

DEFAULT_COMMANDS = {"claude-code": ["claude"]}
INSTALL_HINTS = {
    "claude": "npm install -g @anthropic-ai/claude-code",
    "gemini": "npm install -g @google/gemini-cli",
}


def check_agents(agents_file: Path | None) -> list[tuple[bool, str, str]]:
    try:
        specs = load_agents(agents_file)
    except AgentsFileError as exc:
        return [(False, str(exc), "correct the file (docs/agents.md has examples)")]
    where = f"agents file {agents_file}" if agents_file else "no agents file: the demo agent"
    found: list[tuple[bool, str, str]] = []
    for spec in specs.values():
        if not spec.is_active:
            continue
        label = f"agent {spec.name!r} ({spec.kind}, {where})"
        if spec.kind == "openai":
            variable = getattr(spec.settings, "api_key_env", None)
            if variable and not os.environ.get(variable):
                found.append((False, f"{label}: {variable} is empty", f"set {variable}"))
            else:
                found.append((True, f"{label} can run", ""))
            continue
        command = getattr(spec.settings, "command", None) or DEFAULT_COMMANDS.get(spec.kind)
        if isinstance(command, str):
            command = shlex.split(command)
        program = str(command[0]) if command else ""
        path = program if os.sep in program else shutil.which(program)
        if path and os.access(path, os.X_OK) and Path(path).is_file():
            found.append((True, f"{label}: {program} → {path}", ""))
        else:
            name = Path(program).name
            hint = INSTALL_HINTS.get(name, f"install {name}")
            found.append(
                (
                    False,
                    f"{label}: {program!r} is not on PATH or not executable",
                    f"{hint}, or give its full path as `command` in the agents file",
                )
            )
    return found
