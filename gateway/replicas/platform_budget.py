"""One platform budget shared by every gateway replica (issue 19 §5; docs/scale-out.md).

Every outgoing platform call spends a token from the buckets of its route before it is sent:
the platform's published limits, which its adapter declares (`PlatformRoutes`). The buckets
live in Redis when `RAWP_REDIS_URL` is set (gateway.replicas.redis_budget: one Lua script,
Redis `TIME`), so three replicas together spend what one bot token may; without Redis they live
in this process (`MemoryBuckets`). Both are the project's one token bucket (runtime.rate_limit),
and answer `take` the same way for the same sequence of calls.

Rules:

1. A token bucket per (platform, route, scope): `burst` tokens, refilled at `per_second`. The
   scope is the channel where the platform counts per channel (Discord's per-route buckets,
   Slack's chat.postMessage), else the route for the whole bot (Slack's method tiers, which
   count per workspace; one Slack token is one workspace). A platform's `global` route, where
   its table has one (Discord's 50 per second), is a second bucket every call to the platform
   spends from as well; a take spends from all its buckets or none.
2. Priorities: ANSWER (approval prompts, a turn's last posts) > CHUNK (answer chunks while
   streaming, any other content) > STATUS (typing, assistant status, reactions). Across
   replicas a take at a priority may only leave its bucket above that priority's reserve
   (`RESERVE`: STATUS half the burst, CHUNK a fifth, ANSWER none), so status updates on one
   replica can never starve an approval on another: the last tokens are kept for answers.
3. A 429 blocks its route until its Retry-After has passed, for every replica (`block`): the
   libraries still wait out and retry the refused call themselves (never dropped), and every
   other call to that route waits here instead of earning another 429.
4. Within a replica the order of calls, coalescing and dropping are gateway.replicas.budget_queue's.

The priority of a call comes from `call_priority` (a context variable the renderer sets where
it posts a turn's last messages) or else from the kind of call (gateway.replicas.budgeted_platform).
"""

from __future__ import annotations

import contextlib
import enum
import re
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from rawp.clock import SYSTEM_CLOCK, Clock
from runtime.rate_limit import Budget, Draw, MemoryTokenBuckets, TokenBuckets

if TYPE_CHECKING:
    from gateway.platform import ConversationRef


class Priority(enum.IntEnum):
    """Lower is more urgent (rule 2)."""

    ANSWER = 0
    CHUNK = 1
    STATUS = 2


# Rule 2: the share of a bucket's burst a take at this priority must leave in it.
RESERVE = {Priority.ANSWER: 0.0, Priority.CHUNK: 0.2, Priority.STATUS: 0.5}

_PRIORITY: ContextVar[Priority | None] = ContextVar("rawp_call_priority", default=None)


@contextlib.contextmanager
def call_priority(priority: Priority) -> Iterator[None]:
    """Content posted inside this block goes at `priority` (decorations keep STATUS)."""
    token = _PRIORITY.set(priority)
    try:
        yield
    finally:
        _PRIORITY.reset(token)


def current_priority(default: Priority) -> Priority:
    chosen = _PRIORITY.get()
    return default if chosen is None else chosen


@dataclass(frozen=True)
class Limit:
    """`burst` calls at once, refilled at `per_second`; `per_channel`: one bucket per channel."""

    per_second: float
    burst: int
    per_channel: bool = False

    def need(self, priority: Priority) -> float:
        """Tokens a take at `priority` needs in the bucket (rule 2): one, plus its reserve. A
        bucket of one token has no room for a reserve: every priority needs that one."""
        return 1.0 + RESERVE[priority] * (self.burst - 1)


# --- what a platform declares (rule 1) ---------------------------------------------------------
#
# The routes and their limits are the adapter's (adapters/discord/routes.py,
# adapters/slack/routes.py: each cites its platform's published limits); the core spends what
# the declaration says and never names a platform's route.
GLOBAL = "global"  # rule 1: spent by every call of the platform


def _no_label(label: str, headers: Any) -> str | None:
    return None


def _the_channel(conversation: ConversationRef) -> str:
    return conversation.channel_id


@dataclass(frozen=True)
class PlatformRoutes:
    """One platform's rate-limit routes, declared by its adapter (`ChatPlatform.rate_routes`).

    `limits`: route → its limit (`GLOBAL` where the platform has a platform-wide one).
    `calls`: kind of call (gateway.replicas.budgeted_platform.KINDS) → the route it spends; a
    kind the platform has no call for (Discord's status line) is absent and costs nothing.
    `route_of_label`: the route a 429 on the call labelled so (adapters.call_labels) refused,
    given the answer's headers (rule 3); None when that call is not budgeted.
    `channel_of`: the channel where the platform counts a conversation's calls.
    """

    platform: str
    limits: Mapping[str, Limit]
    calls: Mapping[str, str]
    route_of_label: Callable[[str, Any], str | None] = _no_label
    channel_of: Callable[[ConversationRef], str] = _the_channel

    def blocked_route(self, label: str, headers: Any) -> str | None:
        """`platform:route` a 429 on `label` blocks (rule 3), or None if it is not budgeted."""
        route = self.route_of_label(label, headers)
        if route is None or route not in self.limits:
            return None
        return f"{self.platform}:{route}"


ROUTE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*")


def parse_limits(text: str, known: Collection[str] | None = None) -> dict[str, Budget]:
    """`RAWP_GATEWAY_PLATFORM_LIMITS`: `route=rate` items overriding the declared limits,
    comma-separated (`global=5/s,chat.postMessage=2/s`; `*=…` every route), rates as
    runtime.rate_limit.Budget reads them (the count is the burst). With `known` (the routes the
    platforms declare) a route must be one of them. Raises ValueError naming what is wrong."""
    found: dict[str, Budget] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        route, sep, rate = (piece.strip() for piece in item.partition("="))
        named = route == "*" or (
            ROUTE_NAME.fullmatch(route) is not None if known is None else route in known
        )
        if not sep or not named:
            routes = ", ".join(sorted({*known, "*"})) if known is not None else "a platform's"
            raise ValueError(
                f"a platform limit looks like 'chat.postMessage=2/s' with a route of "
                f"{routes}; not {item!r}"
            )
        found[route] = Budget.parse(rate)
    return found


def routes_of(
    limits: Mapping[str, Limit], overrides: dict[str, Budget] | None = None
) -> dict[str, Limit]:
    """A platform's declared limits with the operator's overrides (a route keeps its scope)."""
    table = dict(limits)
    for route, limit in table.items():
        chosen = (overrides or {}).get(route) or (overrides or {}).get("*")
        if chosen is not None:
            table[route] = Limit(chosen.per_second, chosen.burst, limit.per_channel)
    return table


@dataclass(frozen=True)
class Spend:
    """One bucket a call takes a token from: its key (prefix-free) and its limit."""

    key: str
    limit: Limit


def spends(
    routes: Mapping[str, Limit], platform: str, route: str, channel: str | None
) -> tuple[Spend, ...]:
    """The buckets a call to `route` in `channel` spends from (rule 1); none for a route the
    table does not name (it is not budgeted: the library's own limits still apply)."""
    limit = routes.get(route)
    if limit is None:
        return ()
    scope = f":{channel}" if limit.per_channel and channel else ""
    found = [Spend(f"{platform}:{route}{scope}", limit)]
    if GLOBAL in routes and route != GLOBAL:
        found.append(Spend(f"{platform}:{GLOBAL}", routes[GLOBAL]))
    return tuple(found)


def blocked_key(spend: Spend) -> str:
    """Rule 3: a 429 blocks the whole route (every channel), not one bucket of it."""
    return spend.key.split(":", 2)[0] + ":" + spend.key.split(":", 2)[1]


class Buckets(Protocol):
    async def take(self, spends: Sequence[Spend], priority: Priority) -> float:
        """Spend one token from every bucket of `spends`, or none: 0.0 when spent, else how
        many seconds to wait before asking again (rule 1–3)."""

    async def block(self, route_key: str, seconds: float) -> None:
        """Rule 3: no take on `route_key` (`platform:route`) for `seconds`."""

    async def aclose(self) -> None: ...


BLOCKED = "blocked:"  # a route's block, beside its buckets (rule 3)


class PlatformBuckets:
    """Rules 1–3 on the project's one token bucket (runtime.rate_limit): a spend is a draw that
    needs its priority's reserve, a route's 429 is a block every take on the route names."""

    def __init__(self, buckets: TokenBuckets) -> None:
        self.buckets = buckets

    async def take(self, spends: Sequence[Spend], priority: Priority) -> float:
        if not spends:
            return 0.0
        draws = [
            Draw(s.key, s.limit.per_second, s.limit.burst, s.limit.need(priority)) for s in spends
        ]
        return await self.buckets.take(draws, [BLOCKED + blocked_key(s) for s in spends])

    async def block(self, route_key: str, seconds: float) -> None:
        await self.buckets.block(BLOCKED + route_key, seconds)

    async def aclose(self) -> None:
        await self.buckets.aclose()


class MemoryBuckets(PlatformBuckets):
    """The buckets in this process (one replica), timed by the clock's monotonic counter."""

    def __init__(self, clock: Clock = SYSTEM_CLOCK, max_keys: int = 100_000) -> None:
        super().__init__(MemoryTokenBuckets(clock, max_keys))
