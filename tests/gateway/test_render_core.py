"""The renderer's pure core (gateway.rendering.render_core): frames in, operations out.

No platform, no socket, no event loop: each test feeds `RenderCore` frames and reads the list of
operations (gateway.rendering.operations) it returns, which the driver (`SessionRenderer`, its
tests in test_render.py and the adapters' render tests) performs.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.platform import ConversationRef, MessageRef, PlatformLimits
from gateway.rendering import operations as op
from gateway.rendering.chunker import fence_after
from gateway.rendering.render_core import THINKING_TITLE, RenderCore
from gateway.rendering.render_options import (
    REDACTED_THINKING,
    STATE_LINES,
    STOP_NOTES,
    PromptOrigin,
    RenderOptions,
)
from gateway.rendering.turn import DONE, FAILED, STOPPED, WORKING
from tests.gateway.support import frame

CONV = ConversationRef("recording", "chan", "thread")
USER_MESSAGE = MessageRef(CONV, "user-msg")
LIMITS = PlatformLimits(max_message_length=2000, typing_expiry_s=10.0)


def core(limits: PlatformLimits = LIMITS, *, origin: bool = True, **options: Any) -> RenderCore:
    """A core with turn-1 open, started by USER_MESSAGE's prompt (as the driver opens it)."""
    rendering = RenderCore(RenderOptions(**options), limits)
    user = PromptOrigin(USER_MESSAGE, "alice") if origin else None
    turn = rendering.open_turn("turn-1", user, started_at=0.0, joined=False)
    turn.prompt_message_id = "prompt-1"
    return rendering


def feed(rendering: RenderCore, *frames) -> list[op.Operation]:
    ops: list[op.Operation] = []
    for f in frames:
        ops += rendering.render(f)
    return ops


def delta(index: int, text: str):
    return frame("agent.text.delta", {"content_index": index, "text": text})


def done(index: int, text: str = ""):
    return frame("agent.text.done", {"content_index": index, "text": text})


def end(reason: str = "end_turn"):
    return frame("session.turn.end", {"turn_id": "turn-1", "stop_reason": reason})


def request(inv: str, name: str = "Read", group: str | None = None):
    payload: dict[str, Any] = {"invocation_id": inv, "tool_name": name, "input": {}}
    if group:
        payload["parallel_group_id"] = group
    return frame("tool.invoke.request", payload)


def result(inv: str, name: str = "Read", output: Any = "ok", kind: str = "text"):
    payload = {"invocation_id": inv, "tool_name": name, "status": "success"}
    return frame("tool.invoke.result", payload | {"output_type": kind, "output": output})


def posts(ops: list[op.Operation]) -> list[str]:
    return [o.text for o in ops if isinstance(o, op.Post)]


def decorations(ops: list[op.Operation]) -> list[type]:
    return [type(o) for o in ops if not isinstance(o, op.Post)]


# --- text (rule 3) --------------------------------------------------------------------------


def test_deltas_are_held_and_the_done_posts_the_block_once():
    rendering = core()
    assert feed(rendering, delta(0, "Hel"), delta(0, "lo")) == []
    assert not rendering.settled  # buffered text: the cursor must not move
    assert feed(rendering, done(0, "Hello")) == [op.Post("Hello")]
    assert feed(rendering, done(0, "Hello")) == []  # a block is sent once
    assert rendering.settled


def test_a_done_without_text_posts_its_deltas():
    rendering = core()
    assert feed(rendering, delta(0, "from "), delta(0, "deltas"), done(0)) == [
        op.Post("from deltas")
    ]


def test_a_turn_end_posts_the_blocks_whose_done_never_came_then_its_decorations():
    rendering = core()
    feed(rendering, delta(1, "second"), delta(0, "first"), done(2, "third"))
    turn = rendering.turn
    assert turn is not None
    ops = feed(rendering, end())
    assert posts(ops) == ["first", "second"]
    assert ops[2:] == [
        op.StopTyping(turn),
        op.CloseTurnPrompts("turn-1"),
        op.DisarmWorking(turn),
        op.ClearStatus(),
        op.DeleteInterim(turn),
        op.React(USER_MESSAGE, DONE),
        op.Resolve("prompt-1", "end_turn"),
    ]
    assert rendering.turn is None and rendering.has_ended("turn-1")
    assert feed(rendering, end()) == []  # no turn: nothing to end


def test_a_text_outside_any_turn_is_posted_at_its_done_only():
    rendering = RenderCore(RenderOptions(), LIMITS)
    assert feed(rendering, delta(0, "lost")) == []
    assert feed(rendering, done(0, "said")) == [op.Post("said")]


def test_long_text_is_cut_to_the_platform_limit():
    rendering = core(PlatformLimits(max_message_length=100))
    text = " ".join(f"word{i}" for i in range(60))
    sent = posts(feed(rendering, done(0, text)))
    assert len(sent) > 1 and all(len(t) <= 100 for t in sent)
    assert " ".join(sent).split() == text.split()


def test_the_chunker_the_driver_hands_in_is_the_one_used():
    rendering = RenderCore(RenderOptions(), LIMITS, chunks=lambda text: [text.upper()])
    assert feed(rendering, done(0, "quiet")) == [op.Post("QUIET")]


# --- thinking (rule 4) ----------------------------------------------------------------------


def thinking(text: str, redacted: bool = False):
    return [
        frame("agent.thinking.delta", {"content_index": 0, "text": text}),
        frame("agent.thinking.done", {"content_index": 0, "redacted": redacted}),
    ]


def test_thinking_is_not_shown_unless_asked_for():
    assert feed(core(), *thinking("secret plan")) == []


def test_thinking_shown_goes_out_hidden_and_redacted_thinking_as_a_placeholder():
    assert feed(core(show_thinking=True), *thinking("a plan")) == [
        op.Hidden(THINKING_TITLE, "a plan")
    ]
    redacted = feed(core(show_thinking=True), *thinking("x", redacted=True))
    assert redacted == [op.Post(REDACTED_THINKING)]


# --- tools, task lists, the status line (rules 5 and 6) -------------------------------------


def test_a_tool_changes_only_the_status_line_until_it_finished():
    rendering = core()
    started = feed(rendering, request("t1"))
    assert len(started) == 1 and isinstance(started[0], op.Status) and started[0].text
    finished = feed(rendering, result("t1"))
    assert finished[0] == op.WentOn(invocation_id="t1")  # its approval was answered elsewhere
    assert len(posts(finished)) == 1 and "Read" in posts(finished)[0]
    assert finished[-1] == op.Status(None)  # nothing runs: no line


def test_a_parallel_group_is_one_message_once_all_its_tools_finished():
    rendering = core()
    feed(rendering, request("a", group="g"), request("b", group="g"))
    assert posts(feed(rendering, result("a"))) == []
    assert not rendering.settled
    sent = posts(feed(rendering, result("b")))
    assert len(sent) == 1 and sent[0].count("\n") >= 1  # two lines, one message
    assert rendering.settled


def test_a_group_cut_short_by_the_turn_end_is_posted_then():
    rendering = core()
    feed(rendering, request("a", group="g"), request("b", group="g"), result("a"))
    assert len(posts(feed(rendering, end()))) == 1


def todo(done_count: int):
    status = ["completed"] * done_count + ["pending"] * (3 - done_count)
    tasks = [{"id": str(i), "content": f"Step {i}", "status": status[i]} for i in range(3)]
    return result(f"td{done_count}", "TodoWrite", {"tasks": tasks}, "structured")


def test_a_task_list_is_posted_once_then_edited_in_place():
    rendering = core()
    first = feed(rendering, todo(0))
    kept = [o for o in first if isinstance(o, op.Post)]
    assert len(kept) == 1 and kept[0].keep == "progress"
    message = MessageRef(CONV, "tasks-msg")
    rendering.keep("progress", message)  # the driver hands back what the post became
    second = feed(rendering, todo(1))
    edits = [o for o in second if isinstance(o, op.Edit)]
    assert posts(second) == [] and len(edits) == 1 and edits[0].message == message


def test_without_edits_a_task_list_is_posted_again():
    rendering = core(PlatformLimits(max_message_length=2000, supports_edit=False))
    feed(rendering, todo(0))
    rendering.keep("progress", MessageRef(CONV, "tasks-msg"))
    assert len(posts(feed(rendering, todo(1)))) == 1
    # a tool alone does not post the list again: only a change of a list does
    assert posts(feed(rendering, request("t1", "Bash"), result("t1", "Bash"))) == ["✅ Bash"]


def edits_of(ops: list[op.Operation]) -> list[op.Edit]:
    return [o for o in ops if isinstance(o, op.Edit)]


def bash(inv: str, command: str):
    payload = {"invocation_id": inv, "tool_name": "Bash", "input": {"command": command}}
    return frame("tool.invoke.request", payload)


def test_the_task_list_and_the_running_tool_are_one_message_edited_in_place():
    """Issue 30 §4: one Post, then Edits of the same slot; the last edit shows the final state."""
    rendering = core()
    ops = feed(rendering, todo(0))
    [post] = [o for o in ops if isinstance(o, op.Post)]
    assert post.keep == "progress" and post.text.startswith("📋 Tasks (0/3 done)")
    message = MessageRef(CONV, "progress-msg")
    rendering.keep("progress", message)
    ops = feed(rendering, bash("b1", "npm test"))
    assert edits_of(ops) == [
        op.Edit(message, post.text + "\n🔧 Running: Bash (npm test)", coalesce=True)
    ]
    ops += feed(rendering, result("b1", "Bash", "ok"), todo(1), bash("b2", "make"))
    ops += feed(rendering, result("b2", "Bash", "ok"), todo(3))
    assert [o.keep for o in ops if isinstance(o, op.Post)] == [None, None]  # the tool lines
    assert {e.message for e in edits_of(ops)} == {message}
    assert all(e.coalesce for e in edits_of(ops))
    assert edits_of(ops)[-1].text.startswith("📋 Tasks (3/3 done)")
    [final] = edits_of(feed(rendering, end()))
    assert final == op.Edit(message, edits_of(ops)[-1].text, coalesce=False)  # told at the end
    assert "Running" not in final.text


def test_a_running_tool_at_the_end_leaves_the_final_task_state():
    rendering = core()
    feed(rendering, todo(1))
    rendering.keep("progress", MessageRef(CONV, "progress-msg"))
    feed(rendering, bash("b1", "sleep 100"))
    [final] = edits_of(feed(rendering, end("cancelled")))
    assert final.text.startswith("📋 Tasks (1/3 done)") and "Running" not in final.text


def test_a_turn_without_a_list_posts_no_progress_message():
    rendering = core()
    ops = feed(rendering, bash("b1", "ls"), result("b1", "Bash", "ok"), end())
    assert edits_of(ops) == [] and [o.keep for o in ops if isinstance(o, op.Post)] == [None]


def test_a_plan_and_a_task_list_share_the_progress_message():
    rendering = core()
    plan = frame(
        "agent.plan.updated", {"entries": [{"content": "Read code", "status": "in_progress"}]}
    )
    [post] = feed(rendering, plan)
    rendering.keep("progress", MessageRef(CONV, "progress-msg"))
    [edit] = edits_of(feed(rendering, todo(0)))
    assert edit.text.startswith(post.text + "\n📋 Tasks (0/3 done)")


def usage(used: int, window: int = 200_000):
    return frame("session.usage", {"context_tokens": used, "context_window": window})


def test_context_use_shows_in_the_progress_message_and_warns_once_near_the_limit():
    rendering = core()
    feed(rendering, todo(0))
    rendering.keep("progress", MessageRef(CONV, "progress-msg"))
    [edit] = edits_of(feed(rendering, usage(124_000)))
    assert edit.text.endswith("🧠 context 62%")
    ops = feed(rendering, usage(170_000))
    assert posts(ops) == [
        "⚠️ context 85% — compact it (the agent's `compact` command) or start a new session soon"
    ]
    assert edits_of(ops)[0].text.endswith("🧠 context 85%")
    assert posts(feed(rendering, usage(180_000))) == []  # said once per crossing
    assert posts(feed(rendering, frame("session.usage", {"input_tokens": 5}))) == []


def test_a_compaction_is_a_notice_and_a_new_crossing_warns_again():
    rendering = core()
    feed(rendering, usage(170_000))
    compacted = frame("session.context.compacted", {"before_tokens": 170_000})
    assert posts(feed(rendering, compacted)) == [
        "🗜️ The agent compacted its context (it held 170,000 tokens); earlier detail is summarised."
    ]
    assert posts(feed(rendering, usage(20_000))) == []
    assert len(posts(feed(rendering, usage(165_000)))) == 1


def test_the_agent_state_shows_on_the_status_line_and_awaiting_input_wins():
    rendering = core()
    thinking_now = frame(
        "agent.state.changed", {"previous_state": "idle", "current_state": "thinking"}
    )
    assert feed(rendering, thinking_now) == [op.Status(STATE_LINES["thinking"])]
    waiting = frame(
        "agent.state.changed", {"previous_state": "thinking", "current_state": "awaiting_input"}
    )
    feed(rendering, request("t1"))
    assert feed(rendering, waiting) == [op.Status(STATE_LINES["awaiting_input"])]
    back = frame(
        "agent.state.changed", {"previous_state": "awaiting_input", "current_state": "thinking"}
    )
    assert feed(rendering, back)[0] == op.WentOn(left_awaiting_input=True)


# --- errors, stop reasons, refused prompts (rules 2 and 7) ----------------------------------


def agent_error(severity: str):
    payload = {"code": "boom", "message": "it broke", "severity": severity}
    return frame("agent.error", payload)


def test_a_fatal_error_stops_typing_and_the_status_line_before_it_is_said():
    rendering = core()
    turn = rendering.turn
    assert turn is not None
    ops = feed(rendering, agent_error("fatal"))
    assert ops == [op.StopTyping(turn), op.ClearStatus(), op.Post("❌ **boom**: it broke")]
    assert feed(rendering, request("t1")) == []  # the status line stays cleared
    assert op.React(USER_MESSAGE, FAILED) in feed(rendering, end())


def test_a_warning_is_a_line_and_leaves_the_turn_as_it_was():
    rendering = core()
    assert feed(rendering, agent_error("warning")) == [op.Post("⚠️ it broke")]
    assert op.React(USER_MESSAGE, DONE) in feed(rendering, end())


def test_stop_reasons_choose_the_note_and_the_outcome():
    cancelled = feed(core(), end("cancelled"))
    assert op.React(USER_MESSAGE, STOPPED) in cancelled
    cut = feed(core(), end("max_tokens"))
    assert posts(cut) == [STOP_NOTES["max_tokens"]]


def test_a_turn_whose_working_mark_went_on_takes_it_off_before_the_outcome():
    rendering = core()
    assert rendering.turn is not None
    rendering.turn.working_shown = True  # the driver's ⏳ timer fired
    reactions = [o for o in feed(rendering, end()) if isinstance(o, op.React | op.Unreact)]
    assert reactions == [op.Unreact(USER_MESSAGE, WORKING), op.React(USER_MESSAGE, DONE)]


def test_no_reactions_where_the_platform_has_none_and_none_without_a_message():
    bare = PlatformLimits(max_message_length=2000, supports_reactions=False)
    assert op.React not in decorations(feed(core(bare), end()))
    assert op.React not in decorations(feed(core(origin=False), end()))


def test_a_refused_prompt_is_said_marked_and_resolved():
    rendering = RenderCore(RenderOptions(), LIMITS)
    rendering.origins["prompt-9"] = PromptOrigin(USER_MESSAGE, "alice")
    refusal = frame(
        "session.error",
        {"code": "BUSY", "message": "a turn runs", "ref_message_id": "prompt-9"},
        turn_id=None,
    )
    ops = feed(rendering, refusal)
    assert len(posts(ops)) == 1
    assert ops[1:] == [
        op.QueueRefused("prompt-9"),
        op.React(USER_MESSAGE, FAILED),
        op.Resolve("prompt-9", "rejected"),
    ]


def test_the_usage_footer_is_the_last_content_of_a_turn():
    rendering = core(usage_footer=True)
    usage = {"input_tokens": 4, "output_tokens": 20, "tool_invocations": 0}
    feed(rendering, frame("session.usage", usage))
    ops = feed(rendering, end())
    assert len(posts(ops)) == 1 and isinstance(ops[1], op.StopTyping)


def test_an_approval_is_handed_on_with_the_tool_it_is_about():
    rendering = core()
    feed(rendering, request("t1", "Bash"))
    ask = frame(
        "agent.interaction.request",
        {
            "interaction_id": "perm-1",
            "kind": "approval",
            "prompt": "Run it?",
            "invocation_id": "t1",
            "options": [{"option_id": "allow", "label": "Allow", "kind": "allow_once"}],
        },
    )
    [choice] = feed(rendering, ask)
    assert isinstance(choice, op.AskChoice)
    assert choice.user_id == "alice" and choice.tool is not None and choice.tool.tool_name == "Bash"


# --- properties ---------------------------------------------------------------------------

FENCE_LINES = ["```python", "```", "~~~~", "~~~~", "x = 1", "", "Some prose with words here."]
markdown = st.lists(
    st.one_of(st.sampled_from(FENCE_LINES), st.text("ab `~\n", max_size=30)), max_size=40
).map("\n".join)


def split_points(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts} | {0, len(text)})
    return [text[a:b] for a, b in pairwise(points)]


@settings(max_examples=200, deadline=None)
@given(text=markdown, cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=12))
def test_any_split_of_a_delta_stream_posts_the_same_text(text: str, cuts: list[int]):
    """However the deltas cut the text, what is posted is what one delta would have posted,
    whether the block's `done` came or the turn ended without it."""
    limits = PlatformLimits(max_message_length=100)
    whole = posts(feed(core(limits), delta(0, text), end()))
    pieces = [delta(0, piece) for piece in split_points(text, cuts)]
    assert posts(feed(core(limits), *pieces, end())) == whole
    assert posts(feed(core(limits), *pieces, done(0))) == whole


@settings(max_examples=200, deadline=None)
@given(text=markdown)
def test_no_post_leaves_a_code_fence_open(text: str):
    """A code block longer than a message is closed in one post and reopened in the next."""
    for post in posts(feed(core(PlatformLimits(max_message_length=100)), done(0, text))):
        assert len(post) <= 100
        assert fence_after(None, post) is None, post
