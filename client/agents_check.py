"""`rawp doctor`'s look at this machine's agents: can each configured agent start here?

The agents file loads (the same reader `rawp client` uses), and for each active agent the
program it runs is found: the first word of its `command` on PATH (or the path itself), with
`claude` as Claude Code's default; an `openai` agent needs no program, but the environment
variable named in `api_key_env` must hold the key. Without an agents file the agents are
`demo` and the known agent CLIs found on PATH (client.agents.discover): each found one gets its
line, and one more names those not found and how to install them. Answers plain (ok, what, fix)
triples: the client imports nothing of the command that prints them (tests/test_layout.py).
"""

from __future__ import annotations

import os
import shlex
import shutil
from pathlib import Path

from client.agents import AgentsFileError, load_agents
from client.agents.base import AgentSpec
from client.agents.discover import INSTALL_HINTS, KNOWN_AGENTS

DEFAULT_COMMANDS = {"claude-code": ["claude"]}


def check_agents(agents_file: Path | None) -> list[tuple[bool, str, str]]:
    try:
        specs = load_agents(agents_file)
    except AgentsFileError as exc:
        return [(False, str(exc), "correct the file (docs/agents.md has examples)")]
    found = [
        _check(spec, f"agent {spec.name!r} ({spec.kind}, {_where(agents_file, spec.name)})")
        for spec in specs.values()
        if spec.is_active
    ]
    if agents_file is None:
        found.append(_not_found(specs))
    return found


def _check(spec: AgentSpec, label: str) -> tuple[bool, str, str]:
    if spec.kind == "openai":
        variable = getattr(spec.settings, "api_key_env", None)
        if variable and not os.environ.get(variable):
            return (False, f"{label}: {variable} is empty", f"set {variable}")
        return (True, f"{label} can run", "")
    command = getattr(spec.settings, "command", None) or DEFAULT_COMMANDS.get(spec.kind)
    if isinstance(command, str):
        command = shlex.split(command)
    program = str(command[0]) if command else ""
    path = program if os.sep in program else shutil.which(program)
    if path and os.access(path, os.X_OK) and Path(path).is_file():
        return (True, f"{label}: {program if program == path else f'{program} → {path}'}", "")
    name = Path(program).name
    hint = INSTALL_HINTS.get(name, f"install {name}")
    return (
        False,
        f"{label}: {program!r} is not on PATH or not executable",
        f"{hint}, or give its full path as `command` in the agents file",
    )


def _where(agents_file: Path | None, name: str) -> str:
    if agents_file is not None:
        return f"agents file {agents_file}"
    return "no agents file: built in" if name == "demo" else "no agents file: found on PATH"


def _not_found(offered: dict[str, AgentSpec]) -> tuple[bool, str, str]:
    """Not a failure: which known agent CLIs would be offered once installed."""
    missing = [k for k in KNOWN_AGENTS if k.name not in offered]
    if not missing:
        return (True, "no agents file: every known agent CLI was found on PATH", "")
    listed = "; ".join(f"{k.name} ({k.install})" for k in missing)
    return (True, f"no agents file: not found on PATH, offered once installed: {listed}", "")
