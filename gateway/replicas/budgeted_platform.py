"""`BudgetedPlatform`: every outgoing call of a chat platform spends the shared budget first
(issue 19 §5; gateway.replicas.platform_budget, gateway.replicas.budget_queue).

It wraps the adapter's platform (Discord, Slack) through the one platform hook
(gateway.platform_middleware), as gateway.redaction.redacting_platform wraps a session's:
`rawp_app.launch` binds the wrapper to the conversation service, so every call the renderer,
its `Poster` and its `InteractionFlow` make waits for its turn here. Interaction
responses the adapter makes itself (acknowledging a button within Discord's 3 s) are not
budgeted: they are answers to the platform, on their own limits.

Rules:

1. Each operation is a kind of call (`KIND_OF_OP`, `kind_of`); the platform declares the route
   each kind spends and its limits (`ChatPlatform.rate_routes`, adapters/<platform>/routes.py);
   a kind it names no route for (Discord's status line) costs nothing.
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
from collections.abc import Mapping
from typing import Any

from gateway.platform import ChatPlatform, ConversationRef
from gateway.platform_middleware import PlatformCall, PlatformMiddleware, Proceed
from gateway.replicas.budget_queue import BudgetQueue
from gateway.replicas.platform_budget import (
    Buckets,
    Limit,
    MemoryBuckets,
    PlatformRoutes,
    Priority,
    current_priority,
    routes_of,
    spends,
)
from runtime.rate_limit import Budget
from runtime.tasks import TaskOwner

log = logging.getLogger(__name__)

# kind of call → (default priority, droppable); the route each kind spends is the platform's
# own declaration (`PlatformRoutes.calls`, adapters/<platform>/routes.py).
KINDS: dict[str, tuple[Priority, bool]] = {
    "post": (Priority.CHUNK, False),
    "approval": (Priority.ANSWER, False),
    "upload": (Priority.CHUNK, False),
    "ephemeral": (Priority.ANSWER, False),
    "edit": (Priority.CHUNK, False),
    "close": (Priority.ANSWER, False),
    "delete": (Priority.CHUNK, False),
    "find": (Priority.CHUNK, False),
    "thread": (Priority.ANSWER, False),
    "thread_on": (Priority.ANSWER, False),  # a thread on the user's own message
    "react": (Priority.STATUS, False),
    "unreact": (Priority.STATUS, False),
    "typing": (Priority.STATUS, True),
    "status": (Priority.STATUS, True),
    "clear": (Priority.STATUS, False),
}
_DECORATIONS = {"react", "unreact", "typing", "status"}  # STATUS whatever the caller set

# operation (gateway.platform_middleware.OPS) → the kind of call it is (rule 1).
KIND_OF_OP: dict[str, str] = {
    "send_message": "post",
    "send_keyed": "post",
    "send_hidden": "post",
    "find_keyed": "find",
    "upload_file": "upload",
    "upload_keyed": "upload",
    "edit_message": "edit",
    "delete_message": "delete",
    "send_ephemeral": "ephemeral",
    "add_reaction": "react",
    "remove_reaction": "unreact",
    "trigger_typing": "typing",
    "set_status": "status",  # "clear" when the text is None: kind_of
    "send_interaction": "approval",
    "send_interaction_keyed": "approval",
    "close_interaction": "close",
    "show_modes": "post",  # the mode buttons (issue 30 §1): a post, or its edit (kind_of)
    "open_thread": "thread",
    "open_thread_on": "thread_on",
}
# Operations that spend nothing: they ask the adapter's own state or wait for a user.
UNSPENT = frozenset({"approvers", "wait_for_choice"})


def kind_of(call: PlatformCall) -> str | None:
    """The kind of call `call` is; None when it costs no platform call."""
    name = call.op.name
    if name == "set_status":
        return "status" if call.args["text"] else "clear"
    if name == "show_modes":
        return "edit" if call.args.get("message") is not None else "post"
    if name in ("open_thread", "open_thread_on") and call.conversation.thread_id is not None:
        return None  # already in a thread: the session lives there, nothing is opened
    return KIND_OF_OP.get(name)


class BudgetedPlatform(PlatformMiddleware):
    """Each call waits for its turn in the budget of the route its kind spends (rules 1–3)."""

    def __init__(
        self, inner: ChatPlatform, queue: BudgetQueue, limits: Mapping[str, Limit] | None = None
    ) -> None:
        super().__init__(inner)
        self.queue = queue
        # A platform that declares no routes spends nothing (rule 1).
        declared = inner.rate_routes or PlatformRoutes(inner.name, {}, {})
        self.calls = declared.calls
        self._channel_of = declared.channel_of
        self.routes = limits if limits is not None else declared.limits

    async def around(self, call: PlatformCall, proceed: Proceed) -> Any:
        kind = kind_of(call)
        if kind is not None and not await self._admit(kind, call.conversation):
            return None  # rule 3: a late typing indicator or status, dropped as if shown
        return await proceed(call)

    async def _admit(self, kind: str, conversation: ConversationRef) -> bool:
        default, droppable = KINDS[kind]
        route = self.calls.get(kind)
        if route is None:
            return True
        priority = default if kind in _DECORATIONS else current_priority(default)
        where = spends(self.routes, self.name, route, self._channel_of(conversation))
        coalesce = (conversation, "status") if droppable else None  # typing and status: one
        return await self.queue.admit(where, priority, conversation, coalesce)


# --- rule 4: 429s seen by the platform library block the route for every replica -----------


def asked_wait(headers: Any) -> float:
    for header in ("X-RateLimit-Reset-After", "Retry-After"):
        try:
            return max(0.0, float(headers.get(header, "")))
        except ValueError:
            continue
    return 1.0  # a 429 without a wait: a second, as slack_sdk would wait


def block_on_429(budget: PlatformBudget):
    """Rule 4: a `GatewayMetrics` rate-limit listener that blocks the refused route for every
    replica (the metrics' trace sees every attempt of the platform library's session), as the
    platform's declaration names it (`PlatformRoutes.route_of_label`)."""

    async def blocked(platform: str, label: str, headers: Any) -> None:
        declared = budget.declared.get(platform)
        route = declared.blocked_route(label, headers) if declared else None
        if route is None:
            return
        try:
            await budget.buckets.block(route, asked_wait(headers))
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
        self.declared: dict[str, PlatformRoutes] = {}  # what each wrapped platform declares
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

    def wrap(
        self, platform: ChatPlatform, limits: Mapping[str, Limit] | None = None
    ) -> ChatPlatform:
        """`platform` budgeted by the routes it declares (`rate_routes`), their limits the
        operator's overrides or `limits`; a platform that declares none (the console) as it is."""
        declared = platform.rate_routes
        if declared is None:
            return platform
        self.declared[declared.platform] = declared
        chosen = limits if limits is not None else routes_of(declared.limits, self.overrides)
        return BudgetedPlatform(platform, self.queue, chosen)

    def unknown_overrides(self) -> list[str]:
        """Routes the overrides name that no wrapped platform declares (a typo, said at start)."""
        known = {route for declared in self.declared.values() for route in declared.limits}
        return sorted(set(self.overrides) - known - {"*"})

    async def close(self) -> None:
        await self.tasks.close()
        await self.buckets.aclose()
