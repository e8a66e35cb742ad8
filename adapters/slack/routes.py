"""Slack's rate-limit routes, as the gateway's shared budget spends them
(gateway.replicas.platform_budget; `SlackPlatform.rate_routes`).

https://api.slack.com/apis/rate-limits — Tier 2 20+/min, Tier 3 50+/min, Tier 4 100+/min, per
method per workspace; chat.postMessage "1 per second per channel, short bursts allowed" (its
method page); each method's tier on its page at https://api.slack.com/methods/<method>
(chat.update, chat.delete, reactions.add, conversations.replies, assistant.threads.setStatus:
Tier 3; reactions.remove, files.getUploadURLExternal: Tier 2; chat.postEphemeral: Tier 4).
"""

from __future__ import annotations

from typing import Any

from gateway.platform import ConversationRef
from gateway.replicas.platform_budget import Limit, PlatformRoutes

LIMITS = {
    "chat.postMessage": Limit(1.0, 3, per_channel=True),
    "chat.update": Limit(50 / 60, 5),
    "chat.delete": Limit(50 / 60, 5),
    "chat.postEphemeral": Limit(100 / 60, 10),
    "reactions.add": Limit(50 / 60, 5),
    "reactions.remove": Limit(20 / 60, 3),
    "assistant.threads.setStatus": Limit(50 / 60, 5),
    "conversations.replies": Limit(50 / 60, 5),
    "files.upload": Limit(20 / 60, 3),
}

# kind of call (gateway.replicas.budgeted_platform.KINDS) → route. A thread opened on the
# user's message is that message's ts: no call, so `thread_on` is absent.
CALLS = {
    "post": "chat.postMessage",
    "approval": "chat.postMessage",
    "upload": "files.upload",
    "ephemeral": "chat.postEphemeral",
    "edit": "chat.update",
    "close": "chat.update",
    "delete": "chat.delete",
    "find": "conversations.replies",
    "thread": "chat.postMessage",  # the thread's parent message
    "react": "reactions.add",
    "unreact": "reactions.remove",
    "typing": "assistant.threads.setStatus",
    "status": "assistant.threads.setStatus",
    "clear": "assistant.threads.setStatus",
}


def route_of_label(label: str, headers: Any) -> str | None:
    """A Web API method is its own route; the upload flow's methods share `files.upload`."""
    return "files.upload" if label.startswith("files.") else label


def channel_of(conversation: ConversationRef) -> str:
    """A Slack thread lives in its channel: chat.postMessage counts per channel."""
    return conversation.channel_id


ROUTES = PlatformRoutes("slack", LIMITS, CALLS, route_of_label, channel_of)
