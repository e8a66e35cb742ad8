"""`BudgetedPlatform`: every outgoing call of a chat platform spends the shared budget first
(issue 19 §5; gateway.replicas.platform_budget, gateway.replicas.budget_queue).

It wraps the adapter's platform (Discord, Slack) the way gateway.redaction.redacting_platform wraps
a session's: `rawp_app.launch` binds the wrapper to the conversation service, so every call the
renderer, its `Poster` and its `InteractionFlow` make waits for its turn here. Interaction
responses the adapter makes itself (acknowledging a button within Discord's 3 s) are not
budgeted: they are answers to the platform, on their own limits.

Rules:

1. Each method is a kind of call (`CALLS`) that names its route in the budget table per
   platform; a route the platform does not have (Discord's status line) costs nothing.
2. Priority: `call_priority` where the caller set one (the renderer's turn end: ANSWER), else
   the kind's default: approvals ANSWER; content CHUNK; typing, status and reactions STATUS
   whatever the caller set (a decoration never outranks content). Clearing the status is the
   exception: at a turn's end (ANSWER) it goes with the turn's last posts, which wait for it.
3. Typing and a status text are droppable (coalesced per conversation, dropped when late,
   gateway.replicas.budget_queue rule 3): a dropped one returns as if shown. A status being cleared
   (None) and reactions are kept: they are the state a turn ends in.
4. A 429 the platform library sees (gateway.metrics' trace of its aiohttp session, with
   `block_on_429` listening) blocks the route for every replica for its Retry-After
   (gateway.replicas.platform_budget rule 3); the library still waits out and retries the refused
   call itself, so nothing is lost.
"""

from __future__ import annotations

import logging
from typing import Any

from gateway.platform import (
    ChatPlatform,
    Choice,
    ConversationRef,
    InteractionPrompt,
    MessageRef,
)
from gateway.replicas.budget_queue import BudgetQueue
from gateway.replicas.platform_budget import (
    ROUTES,
    Buckets,
    Limit,
    MemoryBuckets,
    Priority,
    current_priority,
    routes_of,
    spends,
)
from runtime.rate_limit import Budget
from runtime.tasks import TaskOwner

log = logging.getLogger(__name__)

# kind → (route per platform, default priority, droppable)
CALLS: dict[str, tuple[dict[str, str], Priority, bool]] = {
    "post": ({"discord": "message.create", "slack": "chat.postMessage"}, Priority.CHUNK, False),
    "approval": (
        {"discord": "message.create", "slack": "chat.postMessage"},
        Priority.ANSWER,
        False,
    ),
    "upload": ({"discord": "message.create", "slack": "files.upload"}, Priority.CHUNK, False),
    "ephemeral": (
        {"discord": "message.create", "slack": "chat.postEphemeral"},
        Priority.ANSWER,
        False,
    ),
    "edit": ({"discord": "message.edit", "slack": "chat.update"}, Priority.CHUNK, False),
    "close": ({"discord": "message.edit", "slack": "chat.update"}, Priority.ANSWER, False),
    "delete": ({"discord": "message.delete", "slack": "chat.delete"}, Priority.CHUNK, False),
    "find": ({"slack": "conversations.replies"}, Priority.CHUNK, False),
    "thread": ({"discord": "thread.create", "slack": "chat.postMessage"}, Priority.ANSWER, False),
    "react": ({"discord": "reaction", "slack": "reactions.add"}, Priority.STATUS, False),
    "unreact": ({"discord": "reaction", "slack": "reactions.remove"}, Priority.STATUS, False),
    "typing": (
        {"discord": "typing", "slack": "assistant.threads.setStatus"},
        Priority.STATUS,
        True,
    ),
    "status": ({"slack": "assistant.threads.setStatus"}, Priority.STATUS, True),
    "clear": ({"slack": "assistant.threads.setStatus"}, Priority.STATUS, False),
}
_DECORATIONS = {"react", "unreact", "typing", "status"}  # STATUS whatever the caller set


def channel_of(conversation: ConversationRef) -> str:
    """Where the platform counts per channel: a Discord thread is a channel; a Slack thread
    lives in its channel."""
    if conversation.platform == "discord":
        return conversation.thread_id or conversation.channel_id
    return conversation.channel_id


class BudgetedPlatform(ChatPlatform):
    def __init__(
        self, inner: ChatPlatform, queue: BudgetQueue, routes: dict[str, Limit] | None = None
    ) -> None:
        self.inner = inner
        self.queue = queue
        self.name = inner.name
        self.limits = inner.limits
        self.user_ids_per_workspace = inner.user_ids_per_workspace
        self.prompt_board = inner.prompt_board
        self.routes = routes if routes is not None else ROUTES.get(inner.name, {})

    def __getattr__(self, name: str) -> Any:
        # What only the adapter has (Discord's `online`, Slack's `show_prompt`) is its own.
        return getattr(self.inner, name)

    # The adapter's own prompt-board key and delivery (gateway.replicas.cluster_routing rule 3): the
    # base class's defaults would use the wrong key for an adapter that overrides them.
    def where_of(self, conversation: ConversationRef):
        return self.inner.where_of(conversation)

    def deliver_choice(self, conversation: ConversationRef, interaction_id: str, choice: Choice):
        return self.inner.deliver_choice(conversation, interaction_id, choice)

    async def _admit(self, kind: str, conversation: ConversationRef) -> bool:
        routes, default, droppable = CALLS[kind]
        route = routes.get(self.name)
        if route is None:
            return True
        priority = default if kind in _DECORATIONS else current_priority(default)
        where = spends(self.routes, self.name, route, channel_of(conversation))
        coalesce = (conversation, "status") if droppable else None  # typing and status: one
        return await self.queue.admit(where, priority, conversation, coalesce)

    # --- content ----------------------------------------------------------------------------

    async def send_message(self, conversation: ConversationRef, text: str) -> MessageRef:
        await self._admit("post", conversation)
        return await self.inner.send_message(conversation, text)

    async def send_keyed(self, conversation: ConversationRef, text: str, key: str) -> MessageRef:
        await self._admit("post", conversation)
        return await self.inner.send_keyed(conversation, text, key)

    async def find_keyed(self, conversation: ConversationRef, key: str) -> MessageRef | None:
        await self._admit("find", conversation)
        return await self.inner.find_keyed(conversation, key)

    async def upload_file(
        self, conversation: ConversationRef, name: str, mime_type: str, data: bytes
    ) -> MessageRef | None:
        await self._admit("upload", conversation)
        return await self.inner.upload_file(conversation, name, mime_type, data)

    async def upload_keyed(
        self, conversation: ConversationRef, name: str, mime_type: str, data: bytes, key: str
    ) -> MessageRef | None:
        await self._admit("upload", conversation)
        return await self.inner.upload_keyed(conversation, name, mime_type, data, key)

    async def edit_message(self, message: MessageRef, text: str) -> None:
        await self._admit("edit", message.conversation)
        await self.inner.edit_message(message, text)

    async def delete_message(self, message: MessageRef) -> None:
        await self._admit("delete", message.conversation)
        await self.inner.delete_message(message)

    async def send_hidden(self, conversation: ConversationRef, title: str, text: str) -> None:
        await self._admit("post", conversation)
        await self.inner.send_hidden(conversation, title, text)

    async def send_ephemeral(self, conversation: ConversationRef, user_id: str, text: str) -> None:
        await self._admit("ephemeral", conversation)
        await self.inner.send_ephemeral(conversation, user_id, text)

    async def approvers(self, conversation: ConversationRef) -> frozenset[str]:
        return await self.inner.approvers(conversation)

    # --- decorations ------------------------------------------------------------------------

    async def add_reaction(self, message: MessageRef, emoji: str) -> None:
        await self._admit("react", message.conversation)
        await self.inner.add_reaction(message, emoji)

    async def remove_reaction(self, message: MessageRef, emoji: str) -> None:
        await self._admit("unreact", message.conversation)
        await self.inner.remove_reaction(message, emoji)

    async def trigger_typing(self, conversation: ConversationRef) -> None:
        if await self._admit("typing", conversation):
            await self.inner.trigger_typing(conversation)

    async def set_status(self, conversation: ConversationRef, text: str | None) -> None:
        if await self._admit("status" if text else "clear", conversation):
            await self.inner.set_status(conversation, text)

    # --- interactions -----------------------------------------------------------------------

    async def send_interaction(
        self, conversation: ConversationRef, prompt: InteractionPrompt
    ) -> MessageRef:
        await self._admit("approval", conversation)
        return await self.inner.send_interaction(conversation, prompt)

    async def send_interaction_keyed(
        self, conversation: ConversationRef, prompt: InteractionPrompt, key: str
    ) -> MessageRef:
        await self._admit("approval", conversation)
        return await self.inner.send_interaction_keyed(conversation, prompt, key)

    async def wait_for_choice(self, message: MessageRef, timeout_s: float | None) -> Choice | None:
        return await self.inner.wait_for_choice(message, timeout_s)

    async def close_interaction(self, message: MessageRef, outcome: str) -> None:
        await self._admit("close", message.conversation)
        await self.inner.close_interaction(message, outcome)

    # --- conversations ----------------------------------------------------------------------

    async def open_thread(self, conversation: ConversationRef, title: str) -> ConversationRef:
        if conversation.thread_id is None:
            await self._admit("thread", conversation)
        return await self.inner.open_thread(conversation, title)

    async def open_thread_on(self, message: MessageRef, title: str) -> ConversationRef:
        if message.conversation.thread_id is None and self.name == "discord":
            await self._admit("thread", message.conversation)  # Slack's costs no call
        return await self.inner.open_thread_on(message, title)


# --- rule 4: 429s seen by the platform library block the route for every replica -----------

_DISCORD_ROUTES = {
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


def route_of_label(platform: str, label: str, headers: Any) -> str | None:
    """The budget route (`platform:route`) a 429 on the call labelled `label` (the metrics'
    label: adapters.call_labels) blocks, or None if that call is not budgeted."""
    if platform == "discord":
        if headers.get("X-RateLimit-Global") == "true" or headers.get("X-RateLimit-Scope") == (
            "global"
        ):
            return "discord:global"
        route = _DISCORD_ROUTES.get(label)
    else:
        route = "files.upload" if label.startswith("files.") else label
    if route is None or route not in ROUTES.get(platform, {}):
        return None
    return f"{platform}:{route}"


def asked_wait(headers: Any) -> float:
    for header in ("X-RateLimit-Reset-After", "Retry-After"):
        try:
            return max(0.0, float(headers.get(header, "")))
        except ValueError:
            continue
    return 1.0  # a 429 without a wait: a second, as slack_sdk would wait


def block_on_429(queue: BudgetQueue):
    """Rule 4: a `GatewayMetrics` rate-limit listener that blocks the refused route for every
    replica (the metrics' trace sees every attempt of the platform library's session)."""

    async def blocked(platform: str, label: str, headers: Any) -> None:
        route = route_of_label(platform, label, headers)
        if route is None:
            return
        try:
            await queue.buckets.block(route, asked_wait(headers))
        except Exception as exc:  # the library waits it out anyway; only the sharing is lost
            log.warning("could not share a 429 on %s: %s", route, exc)

    return blocked


class PlatformBudget:
    """The budget one gateway process spends: its buckets (Redis when `redis_url` is set, so
    shared with every replica; else this process's), its queue and the queue's tasks."""

    def __init__(
        self,
        buckets: Buckets,
        overrides: dict[str, Budget] | None = None,
        **queue_options: Any,
    ) -> None:
        self.buckets = buckets
        self.overrides = overrides or {}  # RAWP_GATEWAY_PLATFORM_LIMITS
        self.tasks = TaskOwner("platform budget", log)
        self.queue = BudgetQueue(buckets, self.tasks, **queue_options)

    @classmethod
    async def open(
        cls,
        redis_url: str | None,
        redis_prefix: str,
        overrides: dict[str, Budget] | None = None,
        **queue_options: Any,
    ) -> PlatformBudget:
        if redis_url:
            # One process never imports redis.
            from gateway.replicas.redis_budget import RedisBuckets

            buckets: Buckets = RedisBuckets.from_url(redis_url, redis_prefix)
        else:
            buckets = MemoryBuckets()
        budget = cls(buckets, overrides, **queue_options)
        await budget.tasks.start()
        return budget

    def wrap(self, platform: ChatPlatform, routes: dict[str, Limit] | None = None) -> ChatPlatform:
        """`platform` budgeted; one the table has no routes for (the console) as it is."""
        if routes is None and platform.name not in ROUTES:
            return platform
        chosen = routes if routes is not None else routes_of(platform.name, self.overrides)
        return BudgetedPlatform(platform, self.queue, chosen)

    async def close(self) -> None:
        await self.tasks.close()
        await self.buckets.aclose()
