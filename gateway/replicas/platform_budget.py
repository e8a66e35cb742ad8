"""One platform budget shared by every gateway replica (issue 19 §5; docs/scale-out.md).

Every outgoing platform call spends a token from the buckets of its route (`ROUTES`, the
platforms' published limits, one table) before it is sent. The buckets live in Redis when
`RAWP_REDIS_URL` is set (gateway.replicas.redis_budget: one Lua script, Redis `TIME`), so three
replicas together spend what one bot token may; without Redis they live in this process
(`MemoryBuckets`). Both are the project's one token bucket (runtime.rate_limit), and answer
`take` the same way for the same sequence of calls.

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
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Protocol

from rawp.clock import SYSTEM_CLOCK, Clock
from runtime.rate_limit import Budget, Draw, MemoryTokenBuckets, TokenBuckets


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


# --- the table (rule 1) -----------------------------------------------------------------------
#
# Discord: https://discord.com/developers/docs/topics/rate-limits — 50 requests per second per
# bot (global); per-route limits are announced in X-RateLimit-Limit / -Reset-After headers and
# may change; the figures below are what Discord answers for a bot today and what discord.py's
# docs and issue tracker record: message create 5 per 5 s per channel, reactions 1 per 0.25 s
# per channel, typing 5 per 5 s, message edit/delete 5 per 5 s per channel. discord.py still
# reads the headers and waits out any bucket we underestimate (its own Ratelimit per bucket).
#
# Slack: https://api.slack.com/apis/rate-limits — Tier 2 20+/min, Tier 3 50+/min, Tier 4
# 100+/min, per method per workspace; chat.postMessage "1 per second per channel, short bursts
# allowed" (its method page); each method's tier on its page at
# https://api.slack.com/methods/<method> (chat.update, chat.delete, reactions.add,
# conversations.replies, assistant.threads.setStatus: Tier 3; reactions.remove,
# files.getUploadURLExternal: Tier 2; chat.postEphemeral: Tier 4).
GLOBAL = "global"  # rule 1: spent by every call of the platform
ROUTES: dict[str, dict[str, Limit]] = {
    "discord": {
        GLOBAL: Limit(50.0, 50),
        "message.create": Limit(1.0, 5, per_channel=True),
        "message.edit": Limit(1.0, 5, per_channel=True),
        "message.delete": Limit(1.0, 5, per_channel=True),
        "reaction": Limit(4.0, 1, per_channel=True),
        "typing": Limit(1.0, 5, per_channel=True),
        "thread.create": Limit(1.0, 5, per_channel=True),
    },
    "slack": {
        "chat.postMessage": Limit(1.0, 3, per_channel=True),
        "chat.update": Limit(50 / 60, 5),
        "chat.delete": Limit(50 / 60, 5),
        "chat.postEphemeral": Limit(100 / 60, 10),
        "reactions.add": Limit(50 / 60, 5),
        "reactions.remove": Limit(20 / 60, 3),
        "assistant.threads.setStatus": Limit(50 / 60, 5),
        "conversations.replies": Limit(50 / 60, 5),
        "files.upload": Limit(20 / 60, 3),
    },
}


def parse_limits(text: str) -> dict[str, Budget]:
    """`RAWP_GATEWAY_PLATFORM_LIMITS`: `route=rate` items overriding the table, comma-separated
    (`global=5/s,chat.postMessage=2/s`; `*=…` every route), rates as runtime.rate_limit.Budget
    reads them (the count is the burst). Raises ValueError naming what is wrong."""
    known = {route for table in ROUTES.values() for route in table} | {"*"}
    found: dict[str, Budget] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        route, sep, rate = (piece.strip() for piece in item.partition("="))
        if not sep or route not in known:
            raise ValueError(
                f"a platform limit looks like 'chat.postMessage=2/s' with a route of "
                f"{', '.join(sorted(known))}; not {item!r}"
            )
        found[route] = Budget.parse(rate)
    return found


def routes_of(platform: str, overrides: dict[str, Budget] | None = None) -> dict[str, Limit]:
    """The platform's table with the operator's overrides (a route keeps its scope)."""
    table = dict(ROUTES.get(platform, {}))
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
    routes: dict[str, Limit], platform: str, route: str, channel: str | None
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
