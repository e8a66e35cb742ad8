"""Slack payloads shaped as Slack sends them, for the fake Web API, Socket Mode and signed HTTP.

Shapes follow api.slack.com (Events API `event_callback`, interactivity `block_actions`,
`block_suggestion`, `view_submission`, slash-command form fields) and what slack_bolt reads from
them (`slack_bolt/request/payload_utils.py`, `internals.py`): team/user/channel ids,
`authorizations`, `container`, `actions[0].action_id`, `view.callback_id`, `command`.
`SlackWorld` is the fake workspace: one team, one app and its bot, one channel, two humans, and
alice's DM with the app (`dm_channel_id`).
"""

from __future__ import annotations

import itertools
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from rawp_app.doctor.platform_checks import MANIFEST_SCOPES


def _slack_id(prefix: str) -> str:
    return prefix + secrets.token_hex(5).upper()


@dataclass
class SlackWorld:
    """Ids and secrets of the fake workspace. Tests read ids from here."""

    team_id: str = field(default_factory=lambda: _slack_id("T"))
    app_id: str = field(default_factory=lambda: _slack_id("A"))
    bot_user_id: str = field(default_factory=lambda: _slack_id("U"))
    bot_id: str = field(default_factory=lambda: _slack_id("B"))
    channel_id: str = field(default_factory=lambda: _slack_id("C"))
    dm_channel_id: str = field(default_factory=lambda: _slack_id("D"))  # alice ↔ the app
    bot_token: str = field(default_factory=lambda: "xoxb-fake-" + secrets.token_hex(8))
    app_token: str = field(default_factory=lambda: "xapp-1-fake-" + secrets.token_hex(8))
    # The bot token's scopes, sent as `x-oauth-scopes` on every answer as Slack does: the
    # manifest's (adapters/slack/manifest.yaml).
    bot_scopes: tuple[str, ...] = MANIFEST_SCOPES  # what the app's manifest asks for
    signing_secret: str = field(default_factory=lambda: secrets.token_hex(16))
    # Deprecated verification token Slack still puts in payloads; Bolt ignores it when signed.
    verification_token: str = field(default_factory=lambda: secrets.token_hex(12))

    # Where response_url points; FakeSlack sets it to its own /response-url/ route on start.
    response_url_base: str = "https://hooks.slack.invalid/"

    def __post_init__(self) -> None:
        self.alice = self.human("alice")
        self.bob = self.human("bob")
        self.users: dict[str, dict[str, Any]] = {
            self.alice["id"]: self.alice,
            self.bob["id"]: self.bob,
            self.bot_user_id: self.human("rawp-bot", user_id=self.bot_user_id, is_bot=True),
        }
        self._ts = itertools.count(int(time.time() * 1_000_000))

    def human(self, name: str, *, user_id: str | None = None, is_bot: bool = False) -> dict:
        """A users.info `user` object."""
        return {
            "id": user_id or _slack_id("U"),
            "team_id": self.team_id,
            "name": name,
            "real_name": name.title(),
            "is_bot": is_bot,
            "deleted": False,
            "profile": {"display_name": name, "real_name": name.title()},
        }

    def response_url(self) -> str:
        """A fresh response_url (Bolt's `respond()` POSTs there)."""
        return self.response_url_base + secrets.token_hex(8)

    def next_ts(self) -> str:
        """Message timestamps: unique, increasing, formatted like Slack's ("1712345678.000100")."""
        micros = next(self._ts)
        return f"{micros // 1_000_000}.{micros % 1_000_000:06d}"

    # --- Events API ---------------------------------------------------------------------------

    def event_callback(self, event: dict[str, Any]) -> dict[str, Any]:
        """The outer Events API body around one event (HTTP body or Socket Mode payload)."""
        return {
            "token": self.verification_token,
            "team_id": self.team_id,
            "api_app_id": self.app_id,
            "event": event,
            "type": "event_callback",
            "event_id": _slack_id("Ev"),
            "event_time": int(time.time()),
            "authorizations": [
                {
                    "enterprise_id": None,
                    "team_id": self.team_id,
                    "user_id": self.bot_user_id,
                    "is_bot": True,
                    "is_enterprise_install": False,
                }
            ],
            "is_ext_shared_channel": False,
            "event_context": "4-" + secrets.token_hex(12),
        }

    def message_event(
        self,
        text: str,
        *,
        user: dict[str, Any] | None = None,
        channel: str | None = None,
        thread_ts: str | None = None,
        event_type: str = "message",
        files: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """A `message` (or `app_mention`) event from a human; `thread_ts` puts it in a thread.

        `files` (from `FakeSlack.add_file`) makes it a `file_share` message, as Slack sends it.
        """
        ts = self.next_ts()
        event: dict[str, Any] = {
            "type": event_type,
            "user": (user or self.alice)["id"],
            "text": text,
            "ts": ts,
            "event_ts": ts,
            "channel": channel or self.channel_id,
            "team": self.team_id,
            "blocks": [],
        }
        if event_type == "message":  # a DM's channel id starts with D (`message.im`)
            event["channel_type"] = "im" if event["channel"].startswith("D") else "channel"
        if thread_ts is not None:
            event["thread_ts"] = thread_ts
        if files:
            event["files"] = files
            if event_type == "message":
                event["subtype"] = "file_share"
        return event

    def app_mention_event(self, text: str, **kw) -> dict[str, Any]:
        return self.message_event(f"<@{self.bot_user_id}> {text}", event_type="app_mention", **kw)

    # --- interactivity ------------------------------------------------------------------------

    def _interactive_base(self, kind: str, user: dict[str, Any] | None) -> dict[str, Any]:
        user = user or self.alice
        return {
            "type": kind,
            "team": {"id": self.team_id, "domain": "rawp-test"},
            "user": {
                "id": user["id"],
                "username": user["name"],
                "name": user["name"],
                "team_id": self.team_id,
            },
            "api_app_id": self.app_id,
            "token": self.verification_token,
            "trigger_id": f"{int(time.time())}.{secrets.randbelow(10**12)}.{secrets.token_hex(16)}",
            "enterprise": None,
            "is_enterprise_install": False,
        }

    def block_actions(
        self,
        action_id: str,
        value: str,
        *,
        message: dict[str, Any],
        block_id: str = "actions",
        user: dict[str, Any] | None = None,
        channel: str | None = None,
    ) -> dict[str, Any]:
        """A button click on `message` (a message the bot posted: needs `ts`)."""
        channel = channel or self.channel_id
        payload = self._interactive_base("block_actions", user)
        payload.update(
            {
                "container": {
                    "type": "message",
                    "message_ts": message["ts"],
                    "channel_id": channel,
                    "is_ephemeral": False,
                    **({"thread_ts": message["thread_ts"]} if "thread_ts" in message else {}),
                },
                "channel": {"id": channel, "name": "rawp"},
                "message": message,
                "state": {"values": {}},
                "response_url": self.response_url(),
                "actions": [
                    {
                        "type": "button",
                        "action_id": action_id,
                        "block_id": block_id,
                        "value": value,
                        "text": {"type": "plain_text", "text": value, "emoji": True},
                        "action_ts": self.next_ts(),
                    }
                ],
            }
        )
        return payload

    def view(
        self, callback_id: str, *, values: dict | None = None, private_metadata: str = ""
    ) -> dict[str, Any]:
        """A modal `view` object as Slack echoes it in view payloads."""
        return {
            "id": _slack_id("V"),
            "team_id": self.team_id,
            "type": "modal",
            "callback_id": callback_id,
            "private_metadata": private_metadata,
            "title": {"type": "plain_text", "text": "RAWP"},
            "blocks": [],
            "state": {"values": values or {}},
            "hash": secrets.token_hex(8),
            "app_id": self.app_id,
            "bot_id": self.bot_id,
            "root_view_id": None,
            "previous_view_id": None,
            "external_id": "",
        }

    def block_suggestion(
        self,
        action_id: str,
        value: str,
        *,
        block_id: str = "file",
        view: dict[str, Any] | None = None,
        user: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """What an external select sends while the user types (`value` is the typed text)."""
        view = view or self.view("prompt_modal")
        payload = self._interactive_base("block_suggestion", user)
        del payload["trigger_id"]  # suggestions carry no trigger
        payload.update(
            {
                "container": {"type": "view", "view_id": view["id"]},
                "action_id": action_id,
                "block_id": block_id,
                "value": value,
                "view": view,
            }
        )
        return payload

    def view_submission(
        self,
        callback_id: str,
        values: dict[str, Any],
        *,
        private_metadata: str = "",
        user: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """A modal submit; `values` is view.state.values: {block_id: {action_id: {...}}}."""
        payload = self._interactive_base("view_submission", user)
        view = self.view(callback_id, values=values, private_metadata=private_metadata)
        payload.update({"view": view, "response_urls": []})
        return payload

    def slash_command(
        self,
        command: str,
        text: str = "",
        *,
        user: dict[str, Any] | None = None,
        channel: str | None = None,
    ) -> dict[str, str]:
        """Slash-command fields (form-encoded over HTTP, a dict payload over Socket Mode)."""
        user = user or self.alice
        return {
            "token": self.verification_token,
            "team_id": self.team_id,
            "team_domain": "rawp-test",
            "channel_id": channel or self.channel_id,
            "channel_name": "rawp",
            "user_id": user["id"],
            "user_name": user["name"],
            "command": command,
            "text": text,
            "api_app_id": self.app_id,
            "is_enterprise_install": "false",
            "response_url": self.response_url(),
            "trigger_id": f"{int(time.time())}.{secrets.randbelow(10**12)}.{secrets.token_hex(16)}",
        }
