"""Budgets enforced at the master (issue 16 §4; the file: master.services.budget_rules).

Rules:

1. Budgets are checked when an edge sends `control.prompt.request` (master.edge.links.dataplane),
   after the security policy and before the frame reaches the client. The figures are sums of
   `usage_records` read from the database, so every replica sees the same figures and a restart
   forgets nothing.
2. A budget is used up when what was spent in its period is at or above it. The prompt is then
   not forwarded: the edge that sent it gets `session.error` with code `BUDGET_EXCEEDED` and
   `ref_message_id` of the prompt, whose message names the budget, the amount spent and when it
   resets (00:00 UTC, the 1st of next month 00:00 UTC, or a new session). The user's budgets are
   checked first (day, month, session), then the node's; the first used up is named. The
   refused frame's `message_id` is released (relay rule 5): it may be sent again once the
   budget has reset.
3. A turn that is already running is not cut off: usage arrives at its end (DPS §7), and the
   next prompt is refused.
4. At 80 % of a budget the edge gets, once per budget and period, `session.error` with code
   `BUDGET_WARNING` and no `ref_message_id` (docs/protocol.md, Decisions): a notice, not a
   refusal — the prompt goes on. "Once" is a row in `budget_warnings` whose primary key (scope,
   budget, period) only one replica can insert.
5. Both frames carry, besides `code` and `message`, a `budget` object (rawp.events.BudgetState:
   `name`, `scope` user/node, `limit`, `spent`, `resets_at` — ISO 8601, absent for a session
   budget) for edges that show more than the message.
6. A check that cannot read the database refuses the prompt (fails closed, issue 29 §4): a
   budget is a promise that spending stops, and it cannot be kept blind. The edge gets
   `session.error` with code `BUDGET_UNAVAILABLE` and `ref_message_id` of the prompt, saying
   that budgets cannot be checked right now and to send it again later; the failure is logged
   with its traceback here, never shown to the user. The frame's `message_id` is released as
   for rule 2, so the very same prompt may be sent again once the database answers.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from master.edge.live import RelayedSession
from master.edge.usage.usage import period_start
from master.services.budget_rules import BudgetRules
from master.storage import nodes as node_store
from master.storage import usage as store
from master.storage.db import Database
from rawp.clock import Clock, iso

log = logging.getLogger("rawp.master.edge.budgets")

EXCEEDED = "BUDGET_EXCEEDED"
WARNING = "BUDGET_WARNING"
UNAVAILABLE = "BUDGET_UNAVAILABLE"
UNAVAILABLE_MESSAGE = (
    "Budgets cannot be checked right now (the master cannot read its database), so this "
    "prompt was not sent. Send it again in a moment."
)
WARN_AT = 0.8
LABELS = {
    "cost_per_day": "cost per day",
    "cost_per_month": "cost per month",
    "tokens_per_session": "tokens per session",
}


@dataclass(frozen=True)
class Breach:
    """One budget at or past a threshold."""

    code: str  # EXCEEDED or WARNING
    scope: str  # "user" | "node"
    owner: str  # whose: "your" or "node laptop's"
    budget: str
    limit: float
    spent: float
    resets_at: datetime | None

    @property
    def message(self) -> str:
        label = f"{self.owner} {LABELS[self.budget]} budget"
        limit, spent = _amount(self.budget, self.limit), _amount(self.budget, self.spent)
        where = {
            "cost_per_day": "today",
            "cost_per_month": "this month",
            "tokens_per_session": "in this session",
        }[self.budget]
        if self.resets_at is None:
            reset = "It resets with a new session."
        else:
            reset = f"It resets at {self.resets_at.strftime('%Y-%m-%d %H:%M')} UTC."
        if self.code == EXCEEDED:
            head = f"{label[0].upper()}{label[1:]} ({limit}) is used up: {spent} spent {where}."
            return f"{head} Prompts are refused until it resets. {reset}"
        return f"80 % of {label} is used: {spent} of {limit} {where}. {reset}"

    def payload(self) -> dict[str, Any]:
        budget = {
            "name": self.budget,
            "scope": self.scope,
            "limit": self.limit,
            "spent": round(self.spent, 10),
            "resets_at": iso(self.resets_at) if self.resets_at else None,
        }
        return {"code": self.code, "message": self.message, "budget": budget}


@dataclass(frozen=True)
class Unchecked:
    """Rule 6: the refusal when budgets could not be checked."""

    code: str = UNAVAILABLE
    message: str = UNAVAILABLE_MESSAGE

    def payload(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message}


@dataclass(frozen=True)
class Verdict:
    refusal: Breach | Unchecked | None = None
    warnings: tuple[Breach, ...] = ()


def _amount(budget: str, value: float) -> str:
    if budget == "tokens_per_session":
        return f"{int(value):,} tokens"
    return f"${value:,.2f}" if value >= 1 or value == 0 else f"${value:.4f}"


def next_reset(budget: str, now: datetime) -> datetime | None:
    """When the period of `budget` that holds `now` ends (None: a session budget)."""
    if budget == "tokens_per_session":
        return None
    if budget == "cost_per_day":
        return period_start("today", now) + timedelta(days=1)
    start = period_start("month", now)
    if start.month == 12:
        return start.replace(year=start.year + 1, month=1)
    return start.replace(month=start.month + 1)


def period_key(budget: str, now: datetime, session_id: str) -> str:
    """The warning's period (rule 4): the day, the month, or the session."""
    now = now.astimezone(UTC)
    if budget == "cost_per_day":
        return now.strftime("%Y-%m-%d")
    if budget == "cost_per_month":
        return now.strftime("%Y-%m")
    return session_id


class BudgetGuard:
    def __init__(self, rules: BudgetRules, db: Database, clock: Clock) -> None:
        self.rules = rules
        self._db = db
        self._clock = clock

    @property
    def enabled(self) -> bool:
        return self.rules.enabled

    async def check(self, live: RelayedSession) -> Verdict:
        """Rules 2 and 4 for a prompt in `live`; never raises, and refuses when it cannot check
        (rule 6)."""
        if not self.enabled:
            return Verdict()
        try:
            return await self._check(live)
        except Exception:
            log.exception("session %s: budgets could not be checked; prompt refused", live.id)
            return Verdict(refusal=Unchecked())

    async def _check(self, live: RelayedSession) -> Verdict:
        now = self._clock.now().astimezone(UTC)
        scopes = [
            ("user", f"user:{live.user_id}", self.rules.for_user(live.user_id), "your"),
            ("node", f"node:{live.node_id}", self.rules.for_node(live.node_id), None),
        ]
        breaches: list[tuple[str, Breach]] = []
        async with self._db.connect() as conn:
            for scope, key, limits, owner in scopes:
                if not limits.items():
                    continue
                if owner is None:
                    node = await node_store.get_node(conn, live.node_id)
                    owner = f"node {node.device_name if node else live.node_id}'s"
                for budget, limit in limits.items():
                    spent = await _spent(
                        conn, scope, live.user_id, live.node_id, live.id, budget, now
                    )
                    code = EXCEEDED if spent >= limit else WARNING
                    if spent < limit * WARN_AT:
                        continue
                    breach = Breach(
                        code, scope, owner, budget, limit, spent, next_reset(budget, now)
                    )
                    breaches.append((key, breach))
        refused = next((b for _, b in breaches if b.code == EXCEEDED), None)
        if refused is not None:
            return Verdict(refusal=refused)
        warnings = []
        for key, breach in breaches:
            period = period_key(breach.budget, now, live.id)
            async with self._db.begin() as conn:
                if await store.first_warning(conn, key, breach.budget, period, now):
                    warnings.append(breach)
        return Verdict(warnings=tuple(warnings))

    async def standing(
        self, user_id: str, node_ids: list[str], session_id: str | None
    ) -> list[dict[str, Any]]:
        """Every budget that applies to the user and their nodes, with what is spent (the edge
        usage endpoint). A session budget is listed only for `session_id`."""
        now = self._clock.now().astimezone(UTC)
        scopes = [("user", user_id, self.rules.for_user(user_id))]
        scopes += [("node", node_id, self.rules.for_node(node_id)) for node_id in node_ids]
        found = []
        async with self._db.connect() as conn:
            for scope, owner, limits in scopes:
                for budget, limit in limits.items():
                    if budget == "tokens_per_session" and session_id is None:
                        continue
                    node_id = owner if scope == "node" else None
                    spent = await _spent(conn, scope, user_id, node_id, session_id, budget, now)
                    reset = next_reset(budget, now)
                    entry = {"name": budget, "scope": scope, "limit": limit, "spent": spent}
                    if node_id is not None:
                        entry["node_id"] = node_id
                    if reset is not None:
                        entry["resets_at"] = iso(reset)
                    found.append(entry)
        return found


async def _spent(
    conn: Any,
    scope: str,
    user_id: str,
    node_id: str | None,
    session_id: str | None,
    budget: str,
    now: datetime,
) -> float:
    """What `scope` (the user, or the node) spent of `budget` in its period."""
    who = {"user_id": user_id} if scope == "user" else {"node_id": node_id}
    if budget == "tokens_per_session":
        total = await store.total_where(conn, session_id=session_id, **who)
        return float(total.input_tokens + total.output_tokens)
    since = period_start("today" if budget == "cost_per_day" else "month", now)
    return round((await store.total_where(conn, since, **who)).cost_usd, 10)
