"""Slack settings from the environment (.env.example, "gateway" section).

Socket Mode is the default (no public URL needed: SLACK_APP_TOKEN); HTTP mode serves Bolt's
endpoint and verifies every request with SLACK_SIGNING_SECRET. SLACK_API_BASE_URL reaches
another Slack deployment (GovSlack) — and, in the tests, the fake Slack.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from adapters.env import switch

PUBLIC_API_BASE_URL = "https://slack.com/api/"
MODES = ("socket", "http")


def id_set(raw: str | None) -> frozenset[str]:
    """`"C1, C2"` → {"C1", "C2"}; empty means "no restriction"."""
    return frozenset(part.strip() for part in (raw or "").split(",") if part.strip())


@dataclass(frozen=True)
class SlackSettings:
    bot_token: str = field(repr=False)
    app_token: str = field(default="", repr=False)  # Socket Mode (xapp-…)
    signing_secret: str = field(default="", repr=False)  # HTTP mode
    api_base_url: str = PUBLIC_API_BASE_URL
    mode: str = "socket"
    http_host: str = "127.0.0.1"
    http_port: int = 3000
    command: str = "/rawp"
    allowed_teams: frozenset[str] = frozenset()
    allowed_channels: frozenset[str] = frozenset()
    allowed_usergroups: frozenset[str] = frozenset()
    # Members of these user groups may answer any approval, not only the turn's user.
    approver_usergroups: frozenset[str] = frozenset()
    max_retries: int = 5  # 429s waited out per call before giving up
    # Direct messages: None allows them only when no channel is restricted (access.py).
    allow_dms: bool | None = None

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"SLACK_MODE must be one of {', '.join(MODES)}")
        if self.mode == "socket" and not self.app_token:
            raise ValueError("Socket Mode needs SLACK_APP_TOKEN (an xapp-… app-level token)")
        if self.mode == "http" and not self.signing_secret:
            raise ValueError("HTTP mode needs SLACK_SIGNING_SECRET")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> SlackSettings:
        env = os.environ if env is None else env
        token = env.get("SLACK_BOT_TOKEN", "")
        if not token:
            raise ValueError("SLACK_BOT_TOKEN is not set")
        return cls(
            bot_token=token,
            app_token=env.get("SLACK_APP_TOKEN", ""),
            signing_secret=env.get("SLACK_SIGNING_SECRET", ""),
            api_base_url=env.get("SLACK_API_BASE_URL") or PUBLIC_API_BASE_URL,
            mode=env.get("SLACK_MODE") or "socket",
            http_host=env.get("SLACK_HTTP_HOST") or "127.0.0.1",
            http_port=int(env.get("SLACK_HTTP_PORT") or 3000),
            command=env.get("SLACK_COMMAND") or "/rawp",
            allowed_teams=id_set(env.get("SLACK_ALLOWED_TEAMS")),
            allowed_channels=id_set(env.get("SLACK_ALLOWED_CHANNELS")),
            allowed_usergroups=id_set(env.get("SLACK_ALLOWED_USERGROUPS")),
            approver_usergroups=id_set(env.get("SLACK_APPROVER_USERGROUPS")),
            allow_dms=switch(env.get("SLACK_ALLOW_DMS"), "SLACK_ALLOW_DMS"),
        )
