"""Discord's rate-limit routes, as the gateway's shared budget spends them
(gateway.replicas.platform_budget; `DiscordPlatform.rate_routes`).

https://discord.com/developers/docs/topics/rate-limits — 50 requests per second per bot
(global); per-route limits are announced in X-RateLimit-Limit / -Reset-After headers and may
change; the figures below are what Discord answers for a bot today and what discord.py's docs
and issue tracker record: message create 5 per 5 s per channel, reactions 1 per 0.25 s per
channel, typing 5 per 5 s, message edit/delete 5 per 5 s per channel. discord.py still reads
the headers and waits out any bucket we underestimate (its own Ratelimit per bucket).
"""

from __future__ import annotations

from typing import Any

from gateway.platform import ConversationRef
from gateway.replicas.platform_budget import GLOBAL, Limit, PlatformRoutes

LIMITS = {
    GLOBAL: Limit(50.0, 50),
    "message.create": Limit(1.0, 5, per_channel=True),
    "message.edit": Limit(1.0, 5, per_channel=True),
    "message.delete": Limit(1.0, 5, per_channel=True),
    "reaction": Limit(4.0, 1, per_channel=True),
    "typing": Limit(1.0, 5, per_channel=True),
    "thread.create": Limit(1.0, 5, per_channel=True),
}

# kind of call (gateway.replicas.budgeted_platform.KINDS) → route; Discord has no status line
# and finds no keyed post (its nonce makes a repeat a no-op instead), so those cost nothing.
CALLS = {
    "post": "message.create",
    "approval": "message.create",
    "upload": "message.create",
    "ephemeral": "message.create",
    "edit": "message.edit",
    "close": "message.edit",
    "delete": "message.delete",
    "thread": "thread.create",
    "thread_on": "thread.create",  # a thread on the user's message is a call too
    "react": "reaction",
    "unreact": "reaction",
    "typing": "typing",
}

# The metrics' label of a REST call (adapters.call_labels.discord_route) → its route.
LABELS = {
    "POST /channels/{id}/messages": "message.create",
    "PATCH /channels/{id}/messages/{id}": "message.edit",
    "DELETE /channels/{id}/messages/{id}": "message.delete",
    "PUT /channels/{id}/messages/{id}/reactions/{id}/@me": "reaction",
    "DELETE /channels/{id}/messages/{id}/reactions/{id}/@me": "reaction",
    "DELETE /channels/{id}/messages/{id}/reactions/{id}/{id}": "reaction",
    "POST /channels/{id}/typing": "typing",
    "POST /channels/{id}/threads": "thread.create",
    "POST /channels/{id}/messages/{id}/threads": "thread.create",
}


def route_of_label(label: str, headers: Any) -> str | None:
    """A 429 Discord marks global blocks every call; else the route of the refused call."""
    scope_global = headers.get("X-RateLimit-Scope") == "global"
    if headers.get("X-RateLimit-Global") == "true" or scope_global:
        return GLOBAL
    return LABELS.get(label)


def channel_of(conversation: ConversationRef) -> str:
    """Discord counts per channel, and a thread is a channel of its own."""
    return conversation.thread_id or conversation.channel_id


ROUTES = PlatformRoutes("discord", LIMITS, CALLS, route_of_label, channel_of)
