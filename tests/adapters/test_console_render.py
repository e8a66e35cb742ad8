"""End to end: recorded DPS turns rendered by the real renderer on the real console platform."""

from __future__ import annotations

import io
import os

import pytest

from adapters.console import CONSOLE_LIMITS, ConsolePlatform, LineReader
from gateway.edge_link import SeenIds
from gateway.platform import PlatformLimits
from gateway.rendering.chunker import ZWSP, fence_after
from gateway.rendering.render import RenderOptions, SessionRenderer
from gateway.rendering.render_options import REDACTED_THINKING
from rawp.clock import FakeClock
from rawp.events import InteractionResponse
from tests.gateway.fixtures.build import LONG_ANSWER, PROMPT, SESSION
from tests.gateway.support import ManualSleep, Recorder, eventually, load_fixture, settle

SLOW = 2.0  # seconds between frames: a turn slow enough for ⏳ and every status line


class Console:
    """The console platform wired to a renderer, with a fake clock and a typed-ahead input."""

    def __init__(self, typed: str = "", *, limits: PlatformLimits = CONSOLE_LIMITS, **options):
        self.out = io.StringIO()
        self.platform = ConsolePlatform(self.out, LineReader(io.StringIO(typed)), limits=limits)
        self.clock = FakeClock()
        self.sleep = ManualSleep(self.clock)
        self.sent = Recorder()
        self.seen = SeenIds()  # the link's de-duplication, the gateway's only one
        self.renderer = SessionRenderer(
            self.platform,
            self.platform.conversation,
            SESSION,
            send_frame=self.sent,
            options=RenderOptions(**options),
            clock=self.clock,
            sleep=self.sleep,
        )
        self.user_message = self.platform.record_user_message("find the bug")
        self.renderer.expect_prompt(PROMPT, self.user_message, self.platform.user_id)

    async def play(self, frames, pace: float = 0.0) -> None:
        """Feed `frames`, `pace` seconds of the fake clock apart (0: a turn that takes no time,
        too short for ⏳ or a status line: gateway.rendering.working_mark,
        gateway.rendering.status_line)."""
        for frame in frames:
            if self.seen.first_time(frame.message_id):  # as the link delivers them (rule 3)
                await self.renderer.feed(frame)
                if pace:
                    await self.sleep.advance(pace)
        await settle()

    @property
    def text(self) -> str:
        return self.out.getvalue()

    def agent_messages(self) -> list[str]:
        return [
            m.text
            for m in self.platform.messages.values()
            if m.author == "agent" and not m.deleted and not m.text.startswith("❓")
        ]

    @property
    def reactions(self) -> list[str]:
        return self.platform.messages[self.user_message.message_id].reactions


async def test_thinking_is_hidden_by_default_and_typing_spans_the_turn():
    console = Console()
    await console.play(load_fixture("thinking_turn.jsonl"), pace=SLOW)
    assert console.agent_messages() == ["The bug is in `verify()`: it never checks expiry."]
    assert "check auth.ts" not in console.text and "SECRET" not in console.text
    assert console.text.startswith("⋯ typing…\n⏳ working…\n")
    assert console.reactions == ["✅"]  # ⏳ removed, ✅ added
    assert console.platform.typing_calls >= 1
    assert console.renderer.turn is None
    count = console.platform.typing_calls
    await console.sleep.advance(60)
    assert console.platform.typing_calls == count  # typing ended with the turn (K-16)
    assert console.platform.status is None


async def test_thinking_option_shows_a_spoiler_with_pipes_neutralised_and_redaction_hidden():
    console = Console(show_thinking=True)
    await console.play(load_fixture("thinking_turn.jsonl"))
    spoiler = f"💭 Thinking ||The user wants |{ZWSP}| pipes; check auth.ts first.||"
    assert console.agent_messages() == [
        spoiler,
        REDACTED_THINKING,  # a placeholder, never the text
        "The bug is in `verify()`: it never checks expiry.",
    ]
    assert "SECRET-REASONING" not in console.text
    assert "||" not in spoiler[len("💭 Thinking ||") : -2]


async def test_tools_are_compact_lines_grouped_with_diff_blocks():
    console = Console()
    await console.play(load_fixture("tool_diff.jsonl"), pace=SLOW)
    edit, group, web, answer = console.agent_messages()
    assert edit.startswith("✅ Edit (src/auth.ts) · 0.4 s\n```diff\ndiff --git a/src/auth.ts")
    assert edit.endswith("+  return check(t.exp)\n }\n```")
    # one message for the parallel group, in the order the results came, failures distinct
    lines = group.splitlines()
    assert lines[:3] == [
        "✅ Bash (git diff) · 0.4 s",
        "✅ Bash (git status) · 0.4 s",
        "❌ Bash (git log -1) failed: not a git repository · 0.4 s",
    ]
    assert "```diff\ndiff --git a/x b/x" in group  # text output that is a diff (G-DIFF-03)
    assert "<https://example.com/doc>" in web  # G-TOOL-10: the source URL is shown
    assert answer == "Fixed."
    # the running tools were on the status line only
    assert "· ⏳ Running: Edit (src/auth.ts)" in console.text
    assert "· ⏳ Running 3 tools in parallel: git status, git diff, git log -1" in console.text


async def test_task_list_is_rendered_with_marks_and_edited_in_place():
    console = Console()
    await console.play(load_fixture("task_list.jsonl"))
    # Issue 30 §4: the plan and the task list are one progress message, edited in place.
    progress, answer = console.agent_messages()
    assert progress.splitlines() == [
        "🗺️ Plan (1/2 done)",
        "● ~~Read code~~",
        "◐ **Write fix**",
        "📋 Tasks (1/4 done)",
        "● ~~Find the bug~~",
        "◐ **Fix verify()**",
        "\u2003○ Check expiry",
        "✕ *Old idea*",
    ]
    assert answer == "Working through the list."
    # the second TodoWrite and the plan edited the first list (coalesced: one edit, at the end)
    assert console.text.count("✎ ") == 1
    assert "✎ 🗺️ Plan (1/2 done)" in console.text


async def test_approval_is_answered_from_the_console_and_sent_to_the_agent():
    console = Console(typed="7\n1\n")
    frames = load_fixture("approval.jsonl")
    await console.play(frames[:4], pace=SLOW)  # start, tool, request, awaiting_input
    response = await console.sent.next()
    assert response.type == "control.interaction.response"
    assert response.payload == InteractionResponse(interaction_id="perm-1", option_id="allow")
    assert response.parent_id == frames[2].message_id
    assert response.session_id == SESSION and response.turn_id == frames[2].turn_id
    await console.play(frames[4:])
    assert "❓ Run `npm test`?\n  [1] Allow once\n  [2] Deny\n" in console.text
    assert "Please answer with a number from 1 to 2." in console.text  # "7" was refused
    assert "  Answered: Allow once" in console.text
    assert "· ⏸ Waiting for your answer…" in console.text
    assert console.agent_messages() == ["✅ Bash (npm test) · 0.4 s", "All tests pass."]
    assert console.reactions == ["✅"]
    assert console.sent.frames.empty()  # answered exactly once


async def test_unanswered_approval_is_closed_when_the_turn_ends():
    read_fd, write_fd = os.pipe()  # a real pipe that stays open: no answer, no end of input
    with os.fdopen(read_fd) as stdin, os.fdopen(write_fd, "w"):
        console = Console()
        console.platform = ConsolePlatform(console.out, LineReader(stdin))
        console.renderer = SessionRenderer(
            console.platform, console.platform.conversation, SESSION, send_frame=console.sent
        )
        # The recorded turn without the agent going on (its next state, the tool's result):
        # those would say the prompt was answered elsewhere (gateway.approvals.interactions rule 9).
        frames = load_fixture("approval.jsonl")
        await console.play(frames[:4] + frames[-1:])
        assert console.sent.frames.empty()
        assert "  The turn ended before an answer." in console.text


async def test_approval_at_end_of_input_is_denied():
    # The agent named no timeout, so the gateway's default applies (issue 15 §4): deny. The
    # input ended before any time ran out, so the chat does not claim it did.
    console = Console(typed="")
    await console.play(load_fixture("approval.jsonl")[:4])
    await eventually(lambda: "⏱" in console.text, "closing the prompt at end of input")
    assert "⏱ No answer — denied." in console.text
    response = await console.sent.next()
    assert response.payload == InteractionResponse(interaction_id="perm-1", option_id="deny")


@pytest.mark.parametrize("limit", [2000, 300])
async def test_long_answer_is_split_with_code_fences_closed_and_reopened(limit):
    console = Console(limits=PlatformLimits(max_message_length=limit, typing_expiry_s=10))
    await console.play(load_fixture("long_answer.jsonl"))
    messages = console.agent_messages()
    assert len(messages) > 1
    assert all(len(m) <= limit for m in messages)
    assert all(fence_after(None, m) is None for m in messages)
    assert any(m.startswith("```python\n") for m in messages[1:])
    # Take away the fences the chunker added: the answer is back, whole and in order.
    joined = "".join(messages)
    assert joined.replace("\n```python\n", "\n").count("total += weight[79]") == 1
    for piece in ("Here is the rewrite.", "def score", "    return total", "pytest -q"):
        assert piece in joined
    assert LONG_ANSWER.count("step ") == joined.count("step ")


async def test_cancelled_turn_flushes_partial_text_and_marks_the_message_stopped():
    console = Console()
    await console.play(load_fixture("cancelled.jsonl"))
    assert console.agent_messages() == ["Let me look at the whole repo"]  # deltas, no done
    assert console.reactions == ["⏹"]
    assert console.platform.status is None


async def test_fatal_error_stops_typing_at_once_and_is_shown_distinctly():
    console = Console()
    frames = load_fixture("fatal_error.jsonl")
    await console.play(frames[:4])  # up to and including the fatal error
    assert console.renderer.turn is not None and console.renderer.turn.fatal
    count = console.platform.typing_calls
    await console.sleep.advance(30)
    assert console.platform.typing_calls == count  # G-NS-09: no typing after a fatal error
    assert console.agent_messages() == ["❌ **AGENT_CRASHED**: claude exited with status 1"]
    await console.play(frames[4:])
    assert console.agent_messages()[-1] == "Starting"
    assert console.reactions == ["❌"]


async def test_interim_status_message_after_30_seconds_names_the_tool_and_goes_away():
    console = Console()
    frames = load_fixture("cancelled.jsonl")
    await console.play(frames[:4])  # a tool is running
    await console.sleep.advance(20)
    assert "⏳ Running: Grep (TODO)" not in console.agent_messages()
    await console.sleep.advance(12)
    assert console.agent_messages() == ["⏳ Running: Grep (TODO)"]
    await console.play(frames[4:])
    status = [m for m in console.platform.messages.values() if m.text == "⏳ Running: Grep (TODO)"]
    assert status and status[0].deleted  # G-NS-12: deleted when the answer is sent


async def test_history_replay_renders_nothing_twice_and_reports_a_gap():
    console = Console()
    frames = load_fixture("tool_diff.jsonl")
    await console.play(frames[:8])
    before = console.agent_messages()
    from tests.gateway.support import frame as make

    history = make(
        "session.history",
        {"since_message_id": frames[0].message_id, "replayed": 7, "dropped": 2},
        turn_id=None,
    )
    await console.play([history, *frames[1:]])  # the client re-sends everything after [0]
    messages = console.agent_messages()
    assert messages[: len(before)] == before
    assert messages.count("Fixed.") == 1
    assert sum(m.startswith("✅ Edit (src/auth.ts)") for m in messages) == 1
    assert any("2 events were lost" in m for m in messages)
