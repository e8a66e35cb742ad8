"""Slack settings from the environment (.env.example, "gateway" section).

The one place a Slack setting is written (runtime.settings explains how to add one). Socket Mode
is the default (no public URL needed: SLACK_APP_TOKEN); HTTP mode serves Bolt's endpoint and
verifies every request with SLACK_SIGNING_SECRET. SLACK_API_BASE_URL reaches another Slack
deployment (GovSlack) — and, in the tests, the fake Slack. No flags, as for Discord.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Literal

from pydantic import Field, SecretStr, model_validator

from runtime.settings import AutoFlag, CommandSettings, IdSet, Port, setting

PUBLIC_API_BASE_URL = "https://slack.com/api/"
MODES = ("socket", "http")


class SlackSettings(CommandSettings):
    bot_token: SecretStr = setting(
        ...,
        env="SLACK_BOT_TOKEN",
        help="bot token (xoxb-…); app manifest in adapters/slack/manifest.yaml (docs/slack.md)",
    )
    mode: Literal["socket", "http"] = setting(
        "socket",
        env="SLACK_MODE",
        help="how Slack reaches the bot: socket (Socket Mode, needs SLACK_APP_TOKEN) or http "
        "(needs SLACK_SIGNING_SECRET)",
    )
    app_token: SecretStr = setting(
        SecretStr(""),
        env="SLACK_APP_TOKEN",
        help="app-level token with connections:write (xapp-…), for Socket Mode",
    )
    signing_secret: SecretStr = setting(
        SecretStr(""),
        env="SLACK_SIGNING_SECRET",
        help="signing secret every HTTP-mode request is verified with",
    )
    http_host: str = setting(
        "127.0.0.1", env="SLACK_HTTP_HOST", help="HTTP mode: where Bolt's /slack/events listens"
    )
    http_port: Port = setting(3000, env="SLACK_HTTP_PORT", help="HTTP mode: its port")
    api_base_url: str = setting(
        PUBLIC_API_BASE_URL,
        env="SLACK_API_BASE_URL",
        help="Web API base URL; another Slack deployment (GovSlack: https://slack-gov.com/api/) "
        "or a fake",
    )
    command: str = setting(
        "/rawp", env="SLACK_COMMAND", help="the slash command the app's manifest declares"
    )
    allowed_teams: IdSet = setting(
        frozenset(), env="SLACK_ALLOWED_TEAMS", help="workspace ids allowed; none: all"
    )
    allowed_channels: IdSet = setting(
        frozenset(), env="SLACK_ALLOWED_CHANNELS", help="channel ids allowed; none: all"
    )
    allowed_usergroups: IdSet = setting(
        frozenset(),
        env="SLACK_ALLOWED_USERGROUPS",
        help="user-group ids whose members may use the bot (read with usergroups.users.list); "
        "none: all",
    )
    approver_usergroups: IdSet = setting(
        frozenset(),
        env="SLACK_APPROVER_USERGROUPS",
        help="user-group ids whose members may answer any approval, not only the turn's user",
    )
    # Direct messages: None allows them only when no channel is restricted (access.py).
    allow_dms: AutoFlag = setting(
        None,
        env="SLACK_ALLOW_DMS",
        help="direct messages: none allows them only when SLACK_ALLOWED_CHANNELS is empty; "
        "1 allows them whatever the channel list says; 0 refuses them",
    )
    # Not an operator setting (no variable): 429s waited out per call before giving up.
    max_retries: Annotated[int, Field(ge=0)] = 5

    @model_validator(mode="after")
    def _mode_has_its_credential(self) -> SlackSettings:
        if self.mode == "socket" and not self.app_token.get_secret_value():
            raise ValueError("Socket Mode needs SLACK_APP_TOKEN (an xapp-… app-level token)")
        if self.mode == "http" and not self.signing_secret.get_secret_value():
            raise ValueError("HTTP mode needs SLACK_SIGNING_SECRET")
        return self

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> SlackSettings:
        """From `env` (default: the process environment); a bad or missing value raises
        `runtime.settings.SettingError` (a ValueError) naming the variable."""
        return cls.from_environment(environ=env)
