"""What a platform call is called in the gateway's metrics (gateway.metrics, `label_of`).

A label names the kind of call, never one of its values: a Discord REST URL becomes its route
template with every id, interaction token, webhook token or emoji replaced by `{id}`
(`POST /channels/{id}/messages`), a Slack Web API URL its method (`chat.postMessage`). Only
lowercase path words survive, so no token, id or text can reach a label (they are mixed-case,
digits, or percent-encoded); a method that does not look like one is `other`.
"""

from __future__ import annotations

import re
from typing import Any

_WORD = re.compile(r"[a-z@._-]{1,40}")
_API_PREFIX = re.compile(r"^/api(?:/v\d+)?")
_SLACK_METHOD = re.compile(r"[a-zA-Z]{1,40}(?:\.[a-zA-Z]{1,40}){1,4}")


def discord_route(method: str, path: str) -> str:
    path = _API_PREFIX.sub("", path)
    parts = [part if _WORD.fullmatch(part) else "{id}" for part in path.strip("/").split("/")]
    return f"{method.upper()} /" + "/".join(parts)


def slack_method(path: str) -> str:
    parent, _, name = path.rstrip("/").rpartition("/")
    is_api = parent.endswith("/api")  # Web API methods live at <base>/api/<method>
    return name if is_api and _SLACK_METHOD.fullmatch(name) else "other"


def discord_label(params: Any) -> str:
    """`label_of` for discord.py's session (aiohttp trace parameters: method, url)."""
    return discord_route(params.method, params.url.path)


def slack_label(params: Any) -> str:
    """`label_of` for slack_sdk's session."""
    return slack_method(params.url.path)
