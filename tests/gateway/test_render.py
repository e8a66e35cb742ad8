"""Renderer rules the console cannot show: other users, other limits, failing decorations."""

from __future__ import annotations

from adapters.slack.platform import SlackPlatform
from gateway.approvals.interactions import ANSWERED_ELSEWHERE, TIMED_OUT, TURN_ENDED
from gateway.edge_link import SeenIds
from gateway.platform import Choice, ConversationRef, MessageRef, PlatformLimits
from gateway.rendering.render import RenderOptions, SessionRenderer
from rawp.clock import FakeClock
from tests.gateway.support import ManualSleep, Recorder, RecordingPlatform, frame, settle

CONV = ConversationRef("recording", "chan", "thread")
USER_MESSAGE = MessageRef(CONV, "user-msg")
PROMPT_ID = "prompt-1"

APPROVAL = {
    "interaction_id": "perm-1",
    "kind": "approval",
    "prompt": "Run `rm -rf build`?",
    "options": [
        {"option_id": "allow", "label": "Allow once", "kind": "allow_once"},
        {"option_id": "deny", "label": "Deny", "kind": "reject_once"},
    ],
}


class Setup:
    def __init__(self, platform: RecordingPlatform | None = None, **options) -> None:
        self.platform = platform or RecordingPlatform()
        self.clock = FakeClock()
        self.sleep = ManualSleep(self.clock)
        self.sent = Recorder()
        self.seen = SeenIds()  # the link's de-duplication, the gateway's only one
        self.renderer = SessionRenderer(
            self.platform,
            CONV,
            "sess-1",
            send_frame=self.sent,
            options=RenderOptions(**options),
            clock=self.clock,
            sleep=self.sleep,
        )
        self.renderer.expect_prompt(PROMPT_ID, USER_MESSAGE, "alice")

    async def feed(self, *frames) -> None:
        for f in frames:
            if self.seen.first_time(f.message_id):  # as the link delivers them (rule 3)
                await self.renderer.feed(f)
        await settle()

    def texts(self) -> list[str]:
        return [c[1] for c in self.platform.of("send")]


def start(turn="turn-1"):
    return frame("session.turn.start", {"turn_id": turn, "prompt_message_id": PROMPT_ID}, turn)


def end(turn="turn-1", reason="end_turn"):
    return frame("session.turn.end", {"turn_id": turn, "stop_reason": reason}, turn)


def done(index: int, text: str, turn="turn-1"):
    return frame("agent.text.done", {"content_index": index, "text": text}, turn)


def delta(index: int, text: str, turn="turn-1"):
    return frame("agent.text.delta", {"content_index": index, "text": text}, turn)


async def test_only_the_turn_starter_may_answer_others_are_refused_privately():
    s = Setup()
    request = frame("agent.interaction.request", APPROVAL)
    await s.feed(start(), request)
    s.platform.answer(Choice("mallory", option_id="allow"))
    s.platform.answer(Choice("alice", option_id="deny"))
    response = await s.sent.next()
    assert response.payload.option_id == "deny" and response.parent_id == request.message_id
    assert s.platform.of("ephemeral") == [
        ("ephemeral", "mallory", "Only the person who started this turn can answer this.")
    ]
    prompt = s.platform.of("interaction")[0][1]
    assert prompt.allowed_user_ids == {"alice"}
    assert [o.label for o in prompt.options] == ["Allow once", "Deny"]
    await settle()
    assert s.platform.of("close")[-1][2] == "Answered: Deny"


async def test_a_configured_approver_may_answer_and_a_forged_option_is_refused():
    s = Setup(approver_ids=frozenset({"lead"}))
    await s.feed(start(), frame("agent.interaction.request", APPROVAL))
    s.platform.answer(Choice("lead", option_id="format-disk"))
    s.platform.answer(Choice("lead", option_id="allow"))
    assert (await s.sent.next()).payload.option_id == "allow"
    assert s.platform.of("ephemeral")[0][2] == "That is not one of the choices."


async def test_free_text_input_is_sent_as_text():
    s = Setup()
    request = dict(APPROVAL, kind="input", options=[], prompt="Branch name?")
    await s.feed(start(), frame("agent.interaction.request", request))
    s.platform.answer(Choice("alice", text="fix/auth"))
    response = await s.sent.next()
    assert response.payload.text == "fix/auth" and response.payload.option_id is None


async def test_timeout_sends_nothing_and_closes_the_prompt():
    s = Setup()
    await s.feed(start(), frame("agent.interaction.request", dict(APPROVAL, timeout_s=60)))
    assert s.platform.of("wait")[0][2] == 60
    s.platform.answer(None)  # the platform's wait ran out
    await settle()
    assert s.platform.of("close") == [("close", "r1", TIMED_OUT)]
    assert s.sent.frames.empty()


async def test_open_prompt_is_closed_unanswered_at_turn_end_and_a_replayed_request_is_ignored():
    s = Setup()
    request = frame("agent.interaction.request", APPROVAL)
    await s.feed(start(), request, request, end())
    assert len(s.platform.of("interaction")) == 1
    assert s.platform.of("close") == [("close", "r1", TURN_ENDED)]
    assert s.sent.frames.empty()


def state(previous: str, current: str, turn="turn-1"):
    return frame(
        "agent.state.changed", {"previous_state": previous, "current_state": current}, turn
    )


def tool_result(invocation_id: str, turn="turn-1"):
    body = {
        "invocation_id": invocation_id,
        "tool_name": "Bash",
        "status": "success",
        "output_type": "text",
        "output": "done",
    }
    return frame("tool.invoke.result", body, turn)


async def test_a_prompt_answered_in_another_edge_is_closed_here_and_never_answered():
    s = Setup()
    about_tool = dict(APPROVAL, interaction_id="perm-tool", invocation_id="bash-1")
    about_nothing = dict(APPROVAL, interaction_id="perm-plain")
    await s.feed(start(), frame("agent.interaction.request", about_tool))
    await s.feed(frame("agent.interaction.request", about_nothing))
    await s.feed(state("tool_calling", "awaiting_input"))
    # The web edge answered the tool's prompt: the agent runs the tool and reports it.
    await s.feed(tool_result("bash-1"))
    assert s.platform.of("close") == [("close", "r1", ANSWERED_ELSEWHERE)]
    # ... and the other prompt: the agent leaves awaiting_input.
    await s.feed(state("awaiting_input", "thinking"))
    assert s.platform.of("close")[-1] == ("close", "r2", ANSWERED_ELSEWHERE)
    s.platform.answer(None)  # a wait that ran out now expires nothing
    await s.feed(end())
    assert len(s.platform.of("close")) == 2 and s.sent.frames.empty()


async def test_a_prompt_answered_here_is_not_closed_as_answered_elsewhere():
    s = Setup()
    await s.feed(start(), frame("agent.interaction.request", dict(APPROVAL, invocation_id="b")))
    s.platform.answer(Choice("alice", option_id="allow"))
    assert (await s.sent.next()).payload.option_id == "allow"
    await s.feed(tool_result("b"), state("awaiting_input", "thinking"), end())
    assert s.platform.of("close") == [("close", "r1", "Answered: Allow once")]


async def test_each_text_block_is_sent_when_done_and_typing_covers_the_whole_turn():
    s = Setup()
    await s.feed(start(), delta(0, "First "), delta(0, "block."), done(0, "First block."))
    assert s.texts() == ["First block."]
    assert s.renderer.turn.heartbeat.running  # K-16: not released at the first done
    await s.sleep.advance(RenderOptions().working_after_s)  # a turn that takes a while: ⏳
    assert s.platform.of("react") == [("react", "user-msg", "⏳")]
    await s.feed(delta(1, "Second"), done(1, ""), done(1, "again"), end())
    assert s.texts() == ["First block.", "Second"]  # empty done → its deltas; no resend
    calls = [c[0] for c in s.platform.calls]
    assert calls.index("typing") < calls.index("send")
    assert s.platform.of("react") == [("react", "user-msg", "⏳"), ("react", "user-msg", "✅")]
    assert s.platform.of("unreact") == [("unreact", "user-msg", "⏳")]
    assert calls.index("unreact") < len(calls) - 1 and calls[-1] == "react"  # ⏳ off, then ✅


async def test_a_short_turn_gets_its_outcome_without_the_hourglass():
    """Issue 19 §6: typing shows the turn started; ⏳ is for a turn that takes a while, so a
    turn ending sooner costs one reaction, ✅, instead of ⏳ on, ⏳ off, ✅ on."""
    s = Setup()
    await s.feed(start(), done(0, "Quick."))
    await s.sleep.advance(RenderOptions().working_after_s * 0.9)
    await s.feed(end())
    await s.sleep.advance(60)  # nothing left behind goes on later
    assert s.platform.of("react") == [("react", "user-msg", "✅")]
    assert s.platform.of("unreact") == []
    assert s.platform.calls[0][0] == "typing"  # G-NS-04: at once


async def test_status_changes_are_coalesced_and_the_turn_end_clears_at_once():
    """Issue 19 §6: one status change per `status_every_s` at most, the latest winning; none
    for a turn shorter than that; the end clears without waiting for a held change."""
    s = Setup(status_every_s=2.0)
    states = ("thinking", "tool_calling", "thinking", "tool_calling")
    await s.feed(start(), *(frame("agent.state.changed", {"current_state": x}) for x in states))
    assert s.platform.of("status") == []  # rule 1: not within the first interval
    await s.sleep.advance(2.0)
    assert s.platform.of("status") == [("status", "🔧 Using tools…")]  # only the latest
    await s.feed(frame("agent.state.changed", {"current_state": "thinking"}))
    assert len(s.platform.of("status")) == 1  # held: the last change went out just now
    await s.feed(end())
    assert s.platform.of("status") == [("status", "🔧 Using tools…"), ("status", None)]
    await s.sleep.advance(10)
    assert s.platform.of("status")[-1] == ("status", None)  # the held one never lands


async def test_interim_status_on_a_platform_without_edits_is_replaced_then_deleted():
    limits = PlatformLimits(max_message_length=2000, typing_expiry_s=10.0, supports_edit=False)
    s = Setup(RecordingPlatform(limits))
    tool = {"invocation_id": "c1", "tool_name": "Bash", "input": {"command": "make"}}
    tool2 = {"invocation_id": "c2", "tool_name": "Grep", "input": {"pattern": "TODO"}}
    await s.feed(start(), frame("tool.invoke.request", tool))
    await s.sleep.advance(32)
    assert s.texts() == ["⏳ Running: Bash (make)"]
    result = {"invocation_id": "c1", "tool_name": "Bash", "status": "success",
              "output_type": "text", "output": "ok"}  # fmt: skip
    await s.feed(frame("tool.invoke.result", result), frame("tool.invoke.request", tool2))
    status_sends = [c for c in s.platform.of("send") if c[1].startswith("⏳")]
    assert [c[1] for c in status_sends][-1] == "⏳ Running: Grep (TODO)"
    assert not s.platform.of("edit")
    await s.feed(end())
    deleted = {c[1] for c in s.platform.of("delete")}
    assert {c[2] for c in status_sends} <= deleted  # every interim message is gone


async def test_the_interim_message_gives_way_to_the_progress_message():
    """Issue 30 §4 (status_line rule 11): once the task list is up, the running tool is named
    there; the interim status message is deleted at once and not shown or deleted again."""
    s = Setup()
    tool = {"invocation_id": "c1", "tool_name": "Bash", "input": {"command": "make"}}
    await s.feed(start(), frame("tool.invoke.request", tool))
    await s.sleep.advance(32)
    [(_, interim_text, interim)] = s.platform.of("send")
    assert interim_text == "⏳ Running: Bash (make)"
    tasks = {"tasks": [{"id": "1", "content": "Build", "status": "in_progress"}]}
    listed = {"invocation_id": "td", "tool_name": "TodoWrite", "status": "success",
              "output_type": "structured", "output": tasks}  # fmt: skip
    await s.feed(frame("tool.invoke.result", listed))
    assert s.platform.of("delete") == [("delete", interim)]
    progress = s.platform.of("send")[-1]
    assert progress[1] == "📋 Tasks (0/1 done)\n◐ **Build**\n🔧 Running: Bash (make)"
    tool2 = {"invocation_id": "c2", "tool_name": "Grep", "input": {"pattern": "TODO"}}
    await s.feed(frame("tool.invoke.request", tool2))
    await s.sleep.advance(10)
    assert [c for c in s.platform.of("send") if c[1].startswith("⏳")] == [
        ("send", interim_text, interim)
    ]  # never shown again
    assert {c[1] for c in s.platform.of("edit")} == {progress[2]}  # only the progress message
    await s.feed(end())
    assert s.platform.of("delete") == [("delete", interim)]  # not deleted twice


async def test_no_interim_message_before_30_seconds():
    s = Setup()
    await s.feed(start())
    await s.sleep.advance(29)
    await s.feed(end())
    assert s.texts() == []
    assert len(s.platform.of("typing")) >= 7  # every 4 s for 29 s


async def test_failing_decorations_never_stop_the_content():
    platform = RecordingPlatform(fail=frozenset({"react", "status", "typing", "unreact"}))
    s = Setup(platform)
    await s.feed(start(), frame("agent.state.changed", {"current_state": "thinking"}))
    await s.feed(done(0, "Still here."), end())
    assert s.texts() == ["Still here."]


async def test_no_reactions_where_the_platform_has_none():
    limits = PlatformLimits(max_message_length=2000, supports_reactions=False)
    s = Setup(RecordingPlatform(limits))
    await s.feed(start(), done(0, "x"), end())
    assert not s.platform.of("react") and not s.platform.of("unreact")


async def test_a_turn_joined_midway_starts_implicitly_and_stragglers_are_dropped():
    s = Setup()
    await s.feed(delta(0, "partial"), end(), done(0, "late text"), delta(1, "late"))
    assert s.texts() == ["partial"]
    assert not s.platform.of("react")  # no user message known for that turn


async def test_a_new_turn_finishes_one_whose_end_never_came():
    s = Setup()
    await s.feed(start("a"), delta(0, "from a", "a"), start("b"), done(0, "from b", "b"), end("b"))
    assert s.texts() == ["from a", "from b"]


async def test_errors_by_severity():
    s = Setup()
    await s.feed(start())
    await s.feed(
        frame("agent.error", {"code": "SLOW", "message": "rate limited", "severity": "warning"})
    )
    await s.feed(
        frame("agent.error", {"code": "TOOL", "message": "tool broke", "severity": "error"})
    )
    assert s.renderer.turn.heartbeat.running  # only a fatal error ends typing
    await s.feed(end())
    assert s.texts() == ["⚠️ rate limited", "❌ **TOOL**: tool broke"]
    assert s.platform.of("react")[-1] == ("react", "user-msg", "❌")


async def test_refused_prompt_marks_the_users_message():
    s = Setup()
    error = {"code": "TURN_QUEUE_FULL", "message": "too many queued prompts"}
    await s.feed(frame("session.error", {**error, "ref_message_id": PROMPT_ID}, turn_id=None))
    assert s.texts() == ["❌ **TURN_QUEUE_FULL**: too many queued prompts"]
    assert s.platform.of("react") == [("react", "user-msg", "❌")]


async def test_commands_are_cached_and_replaced_on_republish():
    s = Setup()
    publish = {"commands": [{"name": "compact", "description": "Shrink the context"}]}
    await s.feed(frame("agent.commands.publish", publish, turn_id=None))
    assert s.renderer.commands.get("compact") is not None
    await s.feed(frame("agent.commands.publish", {"commands": [{"name": "cost"}]}, turn_id=None))
    assert s.renderer.commands.get("compact") is None and s.renderer.commands.get("cost")
    assert s.texts() == []


async def test_slack_limits_chunk_at_forty_thousand():
    s = Setup(RecordingPlatform(SlackPlatform.limits))
    long = ("paragraph " * 500 + "\n\n") * 10  # about 50,000 characters
    await s.feed(start(), done(0, long), end())
    assert len(s.texts()) == 2
    assert all(len(t) <= 40_000 for t in s.texts())
    assert "".join(s.texts()) == long


async def test_thinking_shown_goes_to_the_hidden_form():
    s = Setup(show_thinking=True)
    await s.feed(
        start(),
        frame("agent.thinking.delta", {"content_index": 0, "text": "hmm"}),
        frame("agent.thinking.done", {"content_index": 0}),
        end(),
    )
    assert s.platform.of("hidden") == [("hidden", "💭 Thinking", "hmm")]


async def test_state_changes_only_touch_the_status_line():
    s = Setup()
    await s.feed(start())
    for state in ("thinking", "tool_calling", "idle"):
        await s.sleep.advance(RenderOptions().status_every_s)  # each stands long enough
        await s.feed(frame("agent.state.changed", {"current_state": state}))
    await s.feed(end())
    assert s.texts() == []
    statuses = [c[1] for c in s.platform.of("status")]
    assert statuses[:3] == ["💭 Thinking…", "🔧 Using tools…", None]
    assert set(statuses[3:]) <= {None}  # the turn end clears it again


async def test_task_list_is_edited_within_a_turn_and_posted_afresh_in_the_next():
    s = Setup()

    def todo(turn: str, status: str):
        tasks = {"tasks": [{"id": "1", "content": "Fix it", "status": status}]}
        result = {"invocation_id": f"td-{status}", "tool_name": "TodoWrite",
                  "status": "success", "output_type": "structured", "output": tasks}  # fmt: skip
        return frame("tool.invoke.result", result, turn)

    await s.feed(start("a"), todo("a", "pending"), todo("a", "in_progress"), end("a"))
    await s.feed(start("b"), todo("b", "completed"), end("b"))
    assert s.texts() == ["📋 Tasks (0/1 done)\n○ Fix it", "📋 Tasks (1/1 done)\n● ~~Fix it~~"]
    # the edit within the turn is held (coalesced) and goes out at its end, the final state
    assert s.platform.of("edit") == [("edit", "r1", "📋 Tasks (0/1 done)\n◐ **Fix it**")]


async def test_the_progress_message_is_one_post_and_coalesced_edits():
    """Issue 30 §4: the task list and the running tool are one message; its edits within the
    turn go out at most once per `status_every_s`, the latest one, and the end shows the final
    task state at once."""
    s = Setup()

    def todo(n: int, status: str):
        tasks = {"tasks": [{"id": "1", "content": "Fix it", "status": status}]}
        result = {"invocation_id": f"td-{n}", "tool_name": "TodoWrite",
                  "status": "success", "output_type": "structured", "output": tasks}  # fmt: skip
        return frame("tool.invoke.result", result)

    def bash(inv: str, command: str):
        payload = {"invocation_id": inv, "tool_name": "Bash", "input": {"command": command}}
        return frame("tool.invoke.request", payload)

    await s.feed(start(), todo(0, "in_progress"))
    [(_, progress_text, progress)] = s.platform.of("send")
    await s.feed(bash("b1", "npm test"), bash("b2", "npm run lint"))
    assert s.platform.of("edit") == []  # held: the post went out just now
    await s.sleep.advance(RenderOptions().status_every_s)
    await settle()
    running = "🔧 Running 2 tools in parallel: npm test, npm run lint"
    assert s.platform.of("edit") == [("edit", progress, f"{progress_text}\n{running}")]
    await s.feed(todo(1, "completed"), end())
    edits = s.platform.of("edit")
    assert edits[-1] == ("edit", progress, "📋 Tasks (1/1 done)\n● ~~Fix it~~")
    assert len(edits) == 2 and [c[2] for c in s.platform.of("send")][:1] == [progress]
    await s.sleep.advance(60)
    await settle()
    assert len(s.platform.of("edit")) == 2  # nothing held went out after the final state


async def test_text_outside_a_turn_is_sent_from_its_done_only():
    s = Setup()
    await s.feed(delta(0, "half", turn=None), done(0, "whole", turn=None))
    assert s.texts() == ["whole"]
