"""Usage and budgets in chat (issue 16 §4): the `usage` command's answer, the optional
end-of-turn footer, and the lines for the master's budget notices.

Rules:

1. `/rawp usage` answers the invoking user only (adapters: Discord ephemeral, Slack
   `response_type: ephemeral`) with the master's figures (`GET /v1/edge/usage`): the session of
   the conversation it is typed in (when there is one and it is the user's), today and this
   month in total and per node, and the budgets that apply. The per-node figures are the same
   sums the node metrics endpoint shows for that period (master.edge.usage.usage_report rule 2).
2. Amounts are shown as the master sent them: tokens in and out with thousands separators,
   cost in USD with 2 decimals from $1, 4 below it. Periods are UTC calendar periods.
3. The footer (render option `usage_footer`, off by default) follows the turn's last message:
   the turn's tokens, its cost when the agent reported one, and the context in use when the
   agent reported it (`context_tokens`, `context_window`). Several `session.usage` frames in one
   turn are added up; the context is the last one reported.
4. `BUDGET_EXCEEDED` is shown as 🛑 and `BUDGET_WARNING` as ⚠️ with the master's message, which
   names the budget and when it resets; a `FRAME_TOO_LARGE` (a message longer than the
   session's `max_frame_size`, issue 28 §3) says so and what to do; other `session.error`s keep
   the ❌ line.
5. Context use (issue 30 §4): a `session.usage` with `context_tokens` and `context_window` reads
   as `context 62%` in the turn's progress message; from `CONTEXT_WARN_PERCENT` on a warning is
   posted once, and again only after the context fell below it (a compaction, a new session).
   `session.context.compacted` is a notice in the thread, with the sizes the agent reported.
"""

from __future__ import annotations

from typing import Any

from rawp.events import SessionError, Usage

BUDGET_EXCEEDED = "BUDGET_EXCEEDED"
BUDGET_WARNING = "BUDGET_WARNING"
FRAME_TOO_LARGE = "FRAME_TOO_LARGE"
BUDGET_NAMES = {
    "cost_per_day": "cost per day",
    "cost_per_month": "cost per month",
    "tokens_per_session": "tokens per session",
}


def money(usd: float) -> str:
    """Rule 2: $12.30, $0.0042."""
    return f"${usd:,.2f}" if usd >= 1 or usd == 0 else f"${usd:.4f}"


def tokens(count: int | float) -> str:
    return f"{int(count):,}"


def figures(usage: dict[str, Any]) -> str:
    """One `aggregated_usage` as a chat line's figures (rule 2)."""
    return (
        f"{tokens(usage.get('total_input_tokens', 0))} in / "
        f"{tokens(usage.get('total_output_tokens', 0))} out tokens · "
        f"{money(float(usage.get('estimated_cost', 0)))}"
    )


def _budget_line(budget: dict[str, Any], devices: dict[str, str]) -> str:
    name = BUDGET_NAMES.get(budget.get("name", ""), budget.get("name", "?"))
    whose = "you" if budget.get("scope") == "user" else devices.get(budget.get("node_id", ""), "?")
    amount = tokens if budget.get("name") == "tokens_per_session" else money
    spent, limit = float(budget.get("spent", 0)), float(budget.get("limit", 0))
    reset = budget.get("resets_at")
    when = f", resets {_when(reset)}" if reset else ", resets with a new session"
    share = f" ({spent / limit:.0%})" if limit else ""
    return f"• {name} ({whose}): {amount(spent)} of {amount(limit)}{share}{when}"


def _when(iso_time: str) -> str:
    """`2026-12-04T00:00:00Z` → `2026-12-04 00:00 UTC`."""
    return iso_time.replace("T", " ")[:16] + " UTC"


def usage_text(report: dict[str, Any]) -> str:
    """Rule 1: the answer to `/rawp usage`, from the master's report."""
    devices = {n["node_id"]: str(n.get("device_name") or n["node_id"]) for n in report["nodes"]}
    lines = ["📊 **Usage** (UTC days and months)"]
    session = report.get("session")
    if session is not None:
        device = devices.get(session["node_id"], session["node_id"])
        lines.append(
            f"This session (`{session['session_id']}`, {session.get('agent_name', '?')} on "
            f"{device}): {figures(session['usage'])}"
        )
    for period, title in (("today", "Today"), ("month", "This month")):
        lines.append(f"{title}: {figures(report['total'][period])}")
        for node in report["nodes"]:
            lines.append(f"  • {devices[node['node_id']]}: {figures(node[period])}")
    budgets = report.get("budgets") or []
    if budgets:
        lines.append("Budgets:")
        lines += [_budget_line(b, devices) for b in budgets]
    return "\n".join(lines)


def footer_line(usages: list[Usage]) -> str | None:
    """Rule 3: the footer of a turn that reported `usages`; None when it reported none."""
    if not usages:
        return None
    parts = [
        f"{tokens(sum(u.input_tokens for u in usages))} in / "
        f"{tokens(sum(u.output_tokens for u in usages))} out tokens"
    ]
    costs = [u.cost_usd for u in usages if u.cost_usd is not None]
    if costs:
        parts.append(money(sum(costs)))
    context = next((u for u in reversed(usages) if u.context_tokens is not None), None)
    if context is not None and context.context_tokens is not None:
        used = f"context {tokens(context.context_tokens)}"
        if context.context_window:
            used += (
                f" of {tokens(context.context_window)} "
                f"({context.context_tokens / context.context_window:.0%})"
            )
        parts.append(used)
    return "📊 " + " · ".join(parts)


CONTEXT_WARN_PERCENT = 80


def context_percent(usage: Usage) -> int | None:
    """Rule 5: the share of the model's context in use, when the agent reported both figures."""
    if usage.context_tokens is None or not usage.context_window:
        return None
    return round(100 * usage.context_tokens / usage.context_window)


def context_line(percent: int) -> str:
    return f"🧠 context {percent}%"


def context_warning(percent: int) -> str:
    # The agent's own `compact` command (Claude Code's `/compact`) is what frees it today.
    return (
        f"⚠️ context {percent}% — compact it (the agent's `compact` command) "
        "or start a new session soon"
    )


def compacted_line(before: int | None, after: int | None) -> str:
    """Rule 5: the agent compacted its context (`session.context.compacted`)."""
    sizes = ""
    if before is not None and after is not None:
        sizes = f" ({tokens(before)} → {tokens(after)} tokens)"
    elif before is not None:
        sizes = f" (it held {tokens(before)} tokens)"
    return f"🗜️ The agent compacted its context{sizes}; earlier detail is summarised."


def error_line(error: SessionError) -> str:
    """Rule 4: how a `session.error` reads in chat."""
    if error.code == BUDGET_EXCEEDED:
        return f"🛑 **Budget reached**: {error.message}"
    if error.code == BUDGET_WARNING:
        return f"⚠️ **Budget warning**: {error.message}"
    if error.code == FRAME_TOO_LARGE:
        return f"❌ **Too long to send** ({error.message}): shorten it or send it in parts."
    return f"❌ **{error.code}**: {error.message}"
