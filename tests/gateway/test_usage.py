"""Usage and budgets in chat (gateway.rendering.usage): the `usage` answer, the end-of-turn footer
and the budget notices, through the real renderer onto a recording platform."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gateway.platform import NOT_CONNECTED, ConversationHooks, GuardedHooks, Invocation
from gateway.rendering.usage import error_line, figures, footer_line, money, usage_text
from rawp.events import SessionError, Usage
from tests.gateway.support import frame
from tests.gateway.test_render import CONV, PROMPT_ID, Setup, done, end, start


def _sum(tokens_in: int, tokens_out: int, cost: float, tools: int) -> dict:
    """An `aggregated_usage` as the master sends it."""
    return {
        "total_input_tokens": tokens_in,
        "total_output_tokens": tokens_out,
        "estimated_cost": cost,
        "total_tool_invocations": tools,
    }


TODAY, MONTH = _sum(1500, 30, 1.5, 2), _sum(91500, 930, 12.25, 9)
REPORT = {
    "user_id": "discord:1",
    "periods": {},
    "total": {"today": TODAY, "month": MONTH},
    "nodes": [{"node_id": "n1", "device_name": "laptop", "today": TODAY, "month": MONTH}],
    "session": {
        "session_id": "s1",
        "node_id": "n1",
        "agent_name": "demo",
        "status": "RUNNING",
        "usage": _sum(12, 3, 0.0015, 2),
    },
    "budgets": [
        {
            "name": "cost_per_day",
            "scope": "user",
            "limit": 5.0,
            "spent": 1.5,
            "resets_at": "2026-12-04T00:00:00.000Z",
        },
        {"name": "tokens_per_session", "scope": "node", "node_id": "n1", "limit": 100, "spent": 15},
    ],
}


def test_the_usage_answer_lists_session_periods_nodes_and_budgets():
    assert usage_text(REPORT).splitlines() == [
        "📊 **Usage** (UTC days and months)",
        "This session (`s1`, demo on laptop): 12 in / 3 out tokens · $0.0015",
        "Today: 1,500 in / 30 out tokens · $1.50",
        "  • laptop: 1,500 in / 30 out tokens · $1.50",
        "This month: 91,500 in / 930 out tokens · $12.25",
        "  • laptop: 91,500 in / 930 out tokens · $12.25",
        "Budgets:",
        "• cost per day (you): $1.50 of $5.00 (30%), resets 2026-12-04 00:00 UTC",
        "• tokens per session (laptop): 15 of 100 (15%), resets with a new session",
    ]


def test_without_a_session_or_budgets_those_lines_are_left_out():
    text = usage_text({**REPORT, "session": None, "budgets": []})
    assert "This session" not in text and "Budgets" not in text
    assert "Today: 1,500 in / 30 out tokens · $1.50" in text


@given(st.floats(min_value=0, max_value=1e7, allow_nan=False))
def test_money_is_dollars_with_cents_from_one_dollar_and_four_places_below(usd):
    shown = money(usd)
    assert shown.startswith("$")
    places = shown.split(".")[1] if "." in shown else ""
    assert len(places) == (2 if usd >= 1 or usd == 0 else 4)
    assert abs(float(shown[1:].replace(",", "")) - usd) <= 0.005


def test_figures_read_the_metrics_shape():
    assert figures(REPORT["total"]["today"]) == "1,500 in / 30 out tokens · $1.50"


def test_the_footer_adds_a_turns_usage_and_shows_context_where_reported():
    assert footer_line([]) is None
    assert footer_line([Usage(input_tokens=10, output_tokens=2)]) == "📊 10 in / 2 out tokens"
    both = [
        Usage(input_tokens=1000, output_tokens=20, cost_usd=0.5, context_tokens=5000),
        Usage(input_tokens=500, output_tokens=5, cost_usd=0.75, context_tokens=50_000,
              context_window=200_000),
    ]  # fmt: skip
    assert footer_line(both) == (
        "📊 1,500 in / 25 out tokens · $1.25 · context 50,000 of 200,000 (25%)"
    )


def test_budget_notices_read_as_such():
    exceeded = SessionError(code="BUDGET_EXCEEDED", message="Your cost per day budget …")
    warning = SessionError(code="BUDGET_WARNING", message="80 % of your …")
    other = SessionError(code="TURN_QUEUE_FULL", message="too many")
    assert error_line(exceeded) == "🛑 **Budget reached**: Your cost per day budget …"
    assert error_line(warning) == "⚠️ **Budget warning**: 80 % of your …"
    assert error_line(other) == "❌ **TURN_QUEUE_FULL**: too many"
    too_long = SessionError(code="FRAME_TOO_LARGE", message="frame of 80,259 bytes exceeds …")
    assert error_line(too_long) == (
        "❌ **Too long to send** (frame of 80,259 bytes exceeds …): shorten it or send it in parts."
    )


def _usage(turn="turn-1", **payload):
    return frame("session.usage", payload, turn)


async def test_the_footer_follows_the_turn_only_when_asked_for():
    for footer in (False, True):
        s = Setup(usage_footer=footer)
        usage = _usage(input_tokens=12, output_tokens=3, cost_usd=0.0015)
        await s.feed(start(), done(0, "the answer"), usage, end())
        expected = ["the answer"] + (["📊 12 in / 3 out tokens · $0.0015"] if footer else [])
        assert s.texts() == expected


async def test_a_budget_refusal_marks_the_prompt_and_a_warning_does_not():
    s = Setup()
    warning = {"code": "BUDGET_WARNING", "message": "80 % of your cost per day budget is used"}
    await s.feed(frame("session.error", warning, turn_id=None))
    assert s.platform.of("react") == []  # a notice: the prompt goes on
    refusal = {
        "code": "BUDGET_EXCEEDED",
        "message": "Your cost per day budget ($1.00) is used up",
        "ref_message_id": PROMPT_ID,
    }
    await s.feed(frame("session.error", refusal, turn_id=None))
    assert s.texts() == [
        "⚠️ **Budget warning**: 80 % of your cost per day budget is used",
        "🛑 **Budget reached**: Your cost per day budget ($1.00) is used up",
    ]
    assert s.platform.of("react") == [("react", "user-msg", "❌")]


async def test_the_usage_hook_defaults_and_is_guarded():
    invocation = Invocation("u", CONV)
    assert await ConversationHooks().usage(invocation) == NOT_CONNECTED

    class Broken(ConversationHooks):
        async def usage(self, invocation):
            raise RuntimeError("boom")

    answer = await GuardedHooks(Broken()).usage(invocation)
    assert answer is not None and "went wrong" in answer and "boom" not in answer


async def test_every_conversation_hook_is_guarded_without_a_forwarder():
    """A hook that raises answers an apology (or no suggestions), whichever hook it is: the
    guard is made for every hook of ConversationHooks, new ones included."""
    import inspect

    hooks = [
        name
        for name, _ in inspect.getmembers(ConversationHooks, inspect.iscoroutinefunction)
        if not name.startswith("_")
    ]
    assert {"usage", "prompt", "suggest_nodes", "search_files", "set_busy"} <= set(hooks)

    class Broken(ConversationHooks):
        pass

    def boom(*args):
        raise RuntimeError("boom")

    for name in hooks:
        setattr(Broken, name, boom)
    guarded = GuardedHooks(Broken())
    for name in hooks:
        arity = len(inspect.signature(getattr(ConversationHooks, name)).parameters) - 1
        answer = await getattr(guarded, name)(*[None] * arity)
        listing = str(getattr(ConversationHooks, name).__annotations__["return"]).startswith("list")
        assert answer == [] if listing else "went wrong" in answer, (name, answer)
