"""`rawp up`'s settings: the one place each is written (runtime.settings explains how to add one).

Variables `rawp up` shares with a tier mean the same there and here, and are declared once:
the gateway's thinking, approval, web, platform and transcription settings are its
declarations (gateway.settings, gateway.sessions.voice), RAWP_AGENTS_FILE the one in
runtime.settings the client uses too. `run_up` takes this model as it is; resolved paths and
the owner are properties.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import Field

from gateway.sessions.voice import VoiceSettings
from gateway.settings import (
    ApprovalTimeout,
    Platform,
    approval_timeout_setting,
    platform_setting,
    show_thinking_setting,
    web_host_setting,
    web_public_url_setting,
)
from runtime.settings import Accepts, CommandSettings, Flag, setting
from runtime.shared_settings import agents_file_setting

LoopbackPort = Annotated[
    int, Field(ge=0, le=65535), Accepts("a port number 1–65535, 0 for last run's or a free one")
]


class UpSettings(CommandSettings):
    """`rawp up`'s settings (README "Quick start"; docs/operations-*.md list the tiers')."""

    workspace: Path = setting(
        Path("."), env="RAWP_WORKSPACE", flag="--workspace", help="directory the agent works in"
    )
    agent: str = setting(
        "demo",
        env="RAWP_AGENT",
        flag="--agent",
        help="agent to start: its name (from the agents file, or without one demo or a known "
        "agent CLI found on PATH: claude-code, gemini, …), `claude` for claude-code, or a "
        "kind's name",
    )
    agents_file: Path | None = agents_file_setting(
        "TOML file naming the agents (docs/agents.md); none: the demo agent and the "
        "known agent CLIs found on PATH"
    )
    state_dir: Path = setting(
        Path(".rawp"),
        env="RAWP_STATE_DIR",
        flag="--state-dir",
        help="where rawp up keeps its SQLite databases and keys (master/, client/, gateway/, "
        "up.json)",
    )
    platform: Platform = platform_setting(
        "chat platforms; none: Discord and/or Slack when their tokens are configured, "
        "else the console; the web edge runs beside them unless --no-web (web alone: no "
        "console)"
    )
    owner: str | None = setting(
        None,
        env="RAWP_UP_OWNER",
        flag="--owner",
        help="with Discord or Slack: the chat user this machine is paired for, e.g. "
        "discord:<your user id> or slack:<team id>:<user id> (the console needs none)",
    )
    master_port: LoopbackPort = setting(
        0,
        env="RAWP_UP_MASTER_PORT",
        flag="--master-port",
        help="loopback port of the master; 0: last run's while free, else a free one",
    )
    client_port: LoopbackPort = setting(
        0,
        env="RAWP_UP_CLIENT_PORT",
        flag="--client-port",
        help="loopback port of the client; 0: last run's while free, else a free one",
    )
    no_web: Flag = setting(
        False,
        env="RAWP_UP_NO_WEB",
        flag="--no-web",
        help="do not serve the web edge (by default it runs and a sign-in link is printed)",
    )
    web_port: LoopbackPort = setting(
        0,
        env="RAWP_UP_WEB_PORT",
        flag="--web-port",
        help="port of the web edge; 0: last run's while free, else a free one",
    )
    web_host: str = web_host_setting()
    web_public_url: str | None = web_public_url_setting()
    show_thinking: Flag = show_thinking_setting()
    approval_timeout: ApprovalTimeout = approval_timeout_setting()
    voice: VoiceSettings = Field(default_factory=VoiceSettings)  # voice messages in (issue 30 §6)

    @property
    def workspace_dir(self) -> Path:
        return self.workspace.expanduser().resolve()

    @property
    def agents_path(self) -> Path | None:
        return self.agents_file.expanduser().resolve() if self.agents_file else None

    @property
    def state_path(self) -> Path:
        return self.state_dir.expanduser().resolve()

    @property
    def owner_subject(self) -> str:
        """The chat user this machine is paired for; the console's own without one."""
        return self.owner or "console:local"
