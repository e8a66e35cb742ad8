"""`rawp up`'s settings: the one place each is written (runtime.settings explains how to add one).

Variables `rawp up` shares with a tier mean the same there and here. The gateway's thinking,
approval and transcription settings are its own declarations (gateway.settings),
RAWP_PLATFORM its type with `rawp up`'s wording. The client tier cannot be imported from here
(tests/test_layout.py), so RAWP_AGENTS_FILE is stated again; tests/test_env_example.py checks
that the defaults agree.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import Field, SecretStr

from gateway.settings import (
    ApprovalTimeout,
    Platform,
    TranscribeTimeout,
    TranscribeUrl,
    approval_timeout_setting,
    show_thinking_setting,
    transcribe_key_setting,
    transcribe_model_setting,
    transcribe_timeout_setting,
    transcribe_url_setting,
    web_host_setting,
    web_public_url_setting,
)
from runtime.settings import Accepts, CommandSettings, Flag, setting

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
    agents_file: Path | None = setting(
        None,
        env="RAWP_AGENTS_FILE",
        flag="--agents-file",
        help="TOML file naming the agents (docs/agents.md); none: the demo agent and the "
        "known agent CLIs found on PATH",
    )
    state_dir: Path = setting(
        Path(".rawp"),
        env="RAWP_STATE_DIR",
        flag="--state-dir",
        help="where rawp up keeps its SQLite databases and keys (master/, client/, gateway/, "
        "up.json)",
    )
    platform: Platform = setting(
        (),
        env="RAWP_PLATFORM",
        flag="--platform",
        help="chat platforms; none: Discord and/or Slack when their tokens are configured, "
        "else the console; the web edge runs beside them unless --no-web (web alone: no "
        "console)",
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
    transcribe_url: TranscribeUrl = transcribe_url_setting()
    transcribe_model: str = transcribe_model_setting()
    transcribe_key: SecretStr | None = transcribe_key_setting()
    transcribe_timeout: TranscribeTimeout = transcribe_timeout_setting()
