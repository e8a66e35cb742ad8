"""Agents: the agents file (TOML) and the agent kinds (`client.agents.base.Agent`).

Only agents named in the agents file can run (RAWP §7.2, X-SEC-02). The file looks like:

    [agents.demo]
    kind = "script"
    mode = "jsonl"
    command = ["rawp", "demo-agent"]
    description = "the deterministic demo agent"
    attachments_dir = ".rawp/attachments"   # where prompt attachments are saved (any kind)

    [[agents.demo.tools]]
    name = "Edit"
    category = "edit"

Without an agents file the client offers the demo agent and each known agent CLI found on PATH
(client.agents.discover). docs/agents.md describes the file and the script protocol for users.
"""

from __future__ import annotations

import importlib
import sys
import tomllib
from pathlib import Path
from typing import Any

from client.agents.base import Agent, AgentSpec
from client.agents.discover import discovered
from client.agents.kinds import ScriptSettings, kind_settings
from rawp.events import CatalogTool

# kind → "module:class". Imported only when a configured agent uses the kind: the ACP client
# library alone costs over a second to import, which `rawp up` would pay on every start.
KINDS: dict[str, str] = {
    "script": "client.agents.script:ScriptAgent",
    "openai": "client.agents.openai:OpenAIAgent",
    "claude-code": "client.agents.claude_code:ClaudeCodeAgent",
    "acp": "client.agents.acp:AcpAgent",
}


def kind_class(kind: str) -> type[Agent]:
    module, _, name = KINDS[kind].partition(":")
    return getattr(importlib.import_module(module), name)


class AgentsFileError(ValueError):
    """The agents file cannot be used; the message says where and why."""


DEMO_TOOLS = (
    CatalogTool(name="Edit", description="Edit a file in the workspace", category="edit"),
    CatalogTool(name="Read", description="Read a file", category="read"),
)


def demo_spec() -> AgentSpec:
    return AgentSpec(
        name="demo",
        kind="script",
        settings=ScriptSettings(
            command=[sys.executable, "-m", "rawp_app.cli", "demo-agent"], mode="jsonl"
        ),
        description="the deterministic demo agent (rawp demo-agent)",
        tools=DEMO_TOOLS,
    )


def load_agents(path: Path | None) -> dict[str, AgentSpec]:
    """Read the agents file; None means the demo agent and the known agents found on PATH."""
    if path is None:
        return default_agents()
    try:
        data = tomllib.loads(path.read_text())
    except OSError as exc:
        raise AgentsFileError(f"agents file {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise AgentsFileError(f"agents file {path}: not valid TOML: {exc}") from None
    agents = data.get("agents")
    if not isinstance(agents, dict) or not agents:
        raise AgentsFileError(f"agents file {path}: no [agents.NAME] tables")
    return {name: _spec(f"agents file {path}", name, entry) for name, entry in agents.items()}


def default_agents() -> dict[str, AgentSpec]:
    """No agents file: `demo`, then each known agent CLI on PATH, each read from the table it
    stands for exactly as a file's table is (issue 28 §5)."""
    specs = {"demo": demo_spec()}
    for known, table in discovered():
        specs[known.name] = _spec(f"{known.title} found on PATH", known.name, table)
    return specs


def _spec(source: str, name: str, entry: Any) -> AgentSpec:
    where = f"{source}: [agents.{name}]"
    if not isinstance(entry, dict):
        raise AgentsFileError(f"{where} must be a table")
    kind = entry.get("kind")
    if kind not in KINDS:
        known = ", ".join(sorted(KINDS))
        raise AgentsFileError(f"{where} kind: expected one of {known}, got {kind!r}")
    try:
        settings = kind_settings(kind, entry)  # the one validation (client.agents.kinds)
    except ValueError as exc:
        raise AgentsFileError(f"{where} {exc}") from None
    return AgentSpec(
        name=name,
        kind=kind,
        settings=settings,
        description=settings.description,
        is_active=settings.active,
        tools=settings.tools,
        attachments_dir=settings.attachments_dir,
    )


def create_agent(spec: AgentSpec, **kwargs: Any) -> Agent:
    return kind_class(spec.kind)(spec, **kwargs)
