"""Signed Slack HTTP requests, as Slack POSTs them to a Bolt app running in HTTP mode.

Slack signs `v0:{timestamp}:{raw body}` with HMAC-SHA256 keyed by the app's signing secret and
sends `X-Slack-Signature: v0=<hex>` plus `X-Slack-Request-Timestamp` (Bolt refuses requests
older than 5 minutes). The body encoding depends on the kind:

- events (`event_callback`, `url_verification`): a JSON body;
- interactivity (`block_actions`, `block_suggestion`, `view_submission`): a form with one
  field `payload` holding the JSON;
- slash commands: the command fields form-encoded.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlencode

import aiohttp

Kind = Literal["event", "interactive", "slash_command"]
FORM = "application/x-www-form-urlencoded"


def signature(signing_secret: str, timestamp: str, body: bytes) -> str:
    base = b"v0:" + timestamp.encode() + b":" + body
    return "v0=" + hmac.new(signing_secret.encode(), base, hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class SignedRequest:
    body: bytes
    headers: dict[str, str]


def signed_request(
    kind: Kind,
    payload: dict[str, Any],
    signing_secret: str,
    *,
    timestamp: int | None = None,
) -> SignedRequest:
    """Encode `payload` for `kind` and sign it; `timestamp` defaults to now."""
    if kind == "event":
        body, content_type = json.dumps(payload).encode(), "application/json"
    elif kind == "interactive":
        body, content_type = urlencode({"payload": json.dumps(payload)}).encode(), FORM
    elif kind == "slash_command":
        body, content_type = urlencode(payload).encode(), FORM
    else:
        raise ValueError(f"unknown Slack request kind {kind!r}")
    stamp = str(int(time.time()) if timestamp is None else timestamp)
    headers = {
        "Content-Type": content_type,
        "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": signature(signing_secret, stamp, body),
    }
    return SignedRequest(body, headers)


@dataclass(frozen=True)
class BoltAnswer:
    status: int
    text: str

    def json(self) -> Any:
        return json.loads(self.text) if self.text else None


async def post_signed(
    url: str,
    kind: Kind,
    payload: dict[str, Any],
    signing_secret: str,
    *,
    timestamp: int | None = None,
) -> BoltAnswer:
    """POST a signed Slack request to a Bolt HTTP endpoint (e.g. .../slack/events)."""
    request = signed_request(kind, payload, signing_secret, timestamp=timestamp)
    timeout = aiohttp.ClientTimeout(total=10)
    async with (
        aiohttp.ClientSession(timeout=timeout) as session,
        session.post(url, data=request.body, headers=request.headers) as response,
    ):
        return BoltAnswer(response.status, await response.text())
