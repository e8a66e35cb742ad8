"""The renderer's pure core: one session's frames → the operations that show them (issue 29 §3).

`RenderCore` holds what rendering remembers — the turn in progress (`Turn`), the turns that
ended, the prompts waiting for their turn, the progress message (gateway.rendering.progress),
the agent's state, the files in transit — and turns each frame into a list of
`gateway.rendering.operations`. It does no I/O and never awaits: `SessionRenderer`
(gateway.rendering.render), its driver, performs the list in order and hands back the one result
the core needs (`keep`: the message the progress message was posted as, so the next version
edits it).

What the core decides (the rule numbers are gateway.rendering.render's): text buffered per block
and sent, chunked, at its `done` or at turn end (3); thinking hidden or shown in the platform's
hidden form, redacted thinking as a placeholder (4); tool lines, parallel groups, the progress
message — task list, plan, running tool, context in use — edited in place (5); which status line
the turn shows (6); the outcome reaction and the order of a turn's end (7); approvals handed on
with their tool (8); files (10, gateway.rendering.uploads); errors, replay gaps, refused
prompts, the usage footer and the context warnings (gateway.rendering.usage rule 5); the
"Mode: …" line (11, `ModeLine` below).

What stays in the driver, because it is time or I/O: the typing heartbeat, the coalescing of the
status line and of the progress message's edits (`ProgressEdits`) and the 30-second interim
status message (their timers), the ⏳ timer, the posting itself (keys, the store), reading and
recording which message started a turn, the approval waits, and resolving the futures of
`expect_prompt`. The driver starts a turn (`open_turn`) once it has looked up where its prompt
came from.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from gateway.platform import MessageRef, PlatformLimits
from gateway.rendering import operations as op
from gateway.rendering.chunker import split_markdown
from gateway.rendering.operations import Operation
from gateway.rendering.progress import ProgressMessage
from gateway.rendering.render_options import (
    REDACTED_THINKING,
    STATE_LINES,
    STOP_NOTES,
    PromptOrigin,
    RenderOptions,
)
from gateway.rendering.turn import DONE, FAILED, STOPPED, WORKING, Turn
from gateway.rendering.uploads import FileUploads
from gateway.rendering.usage import error_line, footer_line
from gateway.rendering.views import (
    render_plan,
    render_tasks,
    result_detail,
    result_line,
    running_line,
    task_list_of,
)
from rawp import events as ev
from rawp.frames import Frame

Chunks = Callable[[str], list[str]]  # text → the messages it is cut into (rule 9: redacted)
THINKING_TITLE = "💭 Thinking"

# --- the agent's mode (issue 30 §1, gateway.rendering.render rule 11) ------------------------
#
# Chat offers three modes by name; the gateway sends the Claude Code id of each in
# `control.mode.set`, and the client matches that id to an ACP agent's modes by id or name
# (client.agents.modes). The agent's current mode arrives in `session.capabilities`
# (`current_mode`, docs/protocol.md "agent modes"). A line "Mode: <name>" is posted when it
# differs from the one the thread shows, except the first mode the thread learns when it is
# not the one asked for: that is the agent's starting mode (every Claude Code session starts
# in `default`), not news. The name shown is the chat name of the id (`default` → `ask`), else
# the agent's own name for it, else the id. The mode shown is stored for a restarted gateway
# (the store's `session_modes`), which sends it again when it revives the session
# (gateway.sessions.conversations).

# chat name → the id sent in `control.mode.set` (Claude Code's permission modes).
CHAT_MODES = {"plan": "plan", "ask": "default", "accept-edits": "acceptEdits"}
CHAT_NAMES = {mode_id: name for name, mode_id in CHAT_MODES.items()}


def chat_name(mode_id: str, offered: list[ev.ModeOption] | None = None) -> str:
    """The name the thread shows for `mode_id`."""
    if mode_id in CHAT_NAMES:
        return CHAT_NAMES[mode_id]
    named = next((m.name for m in offered or [] if m.id == mode_id), None)
    return named or mode_id


class ModeLine:
    """What one session's thread has shown of the agent's mode."""

    def __init__(self, shown: str | None = None) -> None:
        self.shown = shown  # the mode id the thread shows; None: none yet
        self.wanted: str | None = shown  # the id last asked for from chat

    def seen(self, caps: ev.Capabilities) -> str | None:
        """The line to post for these capabilities, or None."""
        current = caps.current_mode
        return f"Mode: {chat_name(current, caps.modes)}" if self._changed(current) else None

    def _changed(self, current: str | None) -> bool:
        """`current` is news to show: a change, not the agent's starting choice (unless it
        is the one asked for from chat). Remembers it as shown."""
        if current is None or current == self.shown:
            return False
        first = self.shown is None
        self.shown = current
        return not first or current == self.wanted


class ModelLine(ModeLine):
    """The same for the agent's model (issue 30 §1, `current_model`): "Model: <id>", the id
    being what `/rawp model` takes. The model of the last line posted is the one a restarted
    gateway sends again (the store's `session_models`, gateway.sessions.model_command)."""

    def __init__(self, shown: str | None = None) -> None:
        super().__init__(shown)
        self.noted: tuple | None = None  # the (offered, current) last written to the store

    def seen(self, caps: ev.Capabilities) -> str | None:
        current = caps.current_model
        return f"Model: {current}" if self._changed(current) else None


class RenderCore:
    def __init__(
        self,
        options: RenderOptions,
        limits: PlatformLimits,
        *,
        platform_name: str = "chat",
        chunks: Chunks | None = None,
    ) -> None:
        self.options = options
        self.limits = limits
        self._chunks = chunks or (lambda text: split_markdown(text, limits.max_message_length))
        self.turn: Turn | None = None
        self.agent_state: str | None = None
        self._ended: deque[str] = deque(maxlen=256)
        # Prompts sent and not yet started: the chat message each came from (expect_prompt).
        self.origins: dict[str, PromptOrigin] = {}
        self.progress = ProgressMessage(limits, self._chunks, self.text)  # rule 5
        self.files = FileUploads(platform_name, limits, self.text, options.max_file_bytes)
        self._handlers: dict[str, Callable[[Frame, Any], list[Operation]]] = {
            "session.turn.end": lambda frame, p: self.end_turn(p.stop_reason),
            "agent.text.delta": self._on_text_delta,
            "agent.text.done": self._on_text_done,
            "agent.thinking.delta": self._on_thinking_delta,
            "agent.thinking.done": self._on_thinking_done,
            "agent.state.changed": self._on_state,
            "agent.error": self._on_error,
            "agent.file": lambda frame, p: self.files.on_chunk(p),
            "agent.interaction.request": self._on_interaction,
            "agent.plan.updated": lambda frame, p: self.progress.list_changed(
                "plan", render_plan(p.entries), self._running()
            ),
            "session.usage": self._on_usage,
            "session.context.compacted": lambda frame, p: self.progress.compacted(p),
            "tool.invoke.request": self._on_tool_request,
            "tool.invoke.result": self._on_tool_result,
            "session.history": self._on_history,
            "session.error": self._on_session_error,
        }
        self.frame_types = frozenset(self._handlers)  # what `render` reads; others make nothing

    # --- what the driver asks ---------------------------------------------------------------

    @property
    def settled(self) -> bool:
        """Nothing rendered so far waits for a later frame (gateway.rendering.render)."""
        if self.files.pending:  # a file's pieces are held in memory only
            return False
        turn = self.turn
        if turn is None:
            return True
        return not (turn.unsent_text() or turn.thinking or turn.running or turn.group_results)

    def render(self, frame: Frame) -> list[Operation]:
        """The operations `frame` makes; the driver has started its turn if it names a new one
        (`open_turn`) and dropped it if its turn ended (`has_ended`)."""
        handler = self._handlers.get(frame.type)
        return handler(frame, frame.payload) if handler is not None else []

    def has_ended(self, turn_id: str) -> bool:
        return turn_id in self._ended

    def keep(self, slot: str, message: MessageRef) -> None:
        """The message a `Post(keep=slot)` became (the progress message)."""
        if slot == "progress":
            self.progress.message = message

    def open_turn(
        self, turn_id: str, origin: PromptOrigin | None, *, started_at: float, joined: bool
    ) -> Turn:
        """A turn starts (the previous one was ended first). `joined`: the gateway came in
        midway, so a ⏳ another process put on is taken off at the end (rule 7)."""
        turn = Turn(turn_id, started_at=started_at)
        # Each turn gets its own progress message, at the bottom where it is seen.
        self.progress.new_turn()
        turn.working_shown = joined and origin is not None
        if origin:
            turn.user_message, turn.user_id = origin.message, origin.user_id
        self.turn = turn
        return turn

    def text(self, text: str) -> list[Operation]:
        """Rule 3's text path: nothing for blank text, else one post per chunk."""
        if not text.strip():
            return []
        return [op.Post(chunk) for chunk in self._chunks(text)]

    def status_text(self, turn: Turn) -> str | None:
        """The status line for `turn` (rule 6)."""
        if self.agent_state == "awaiting_input":  # a tool waiting for approval is not running
            return STATE_LINES["awaiting_input"]
        if turn.running:
            return running_line(list(turn.running.values()))
        return STATE_LINES.get(self.agent_state or "")

    # --- the end of a turn ------------------------------------------------------------------

    def end_turn(self, stop_reason: str) -> list[Operation]:
        """The current turn ends: its last content, then its decorations (rules 3, 5, 7)."""
        turn = self.turn
        if turn is None:
            return []
        self.turn = None
        self._ended.append(turn.turn_id)
        ops: list[Operation] = []
        for text in turn.unsent_text():  # rule 3: the deltas stand in for a missing done
            ops += self.text(text)
        ops += self.files.turn_ended()
        for group_id in list(turn.group_results):
            ops += self._flush_group(turn, group_id)
        ops += self.progress.show([], final=True)  # the final task state, no running tool
        if stop_reason in STOP_NOTES:  # the turn's last content, before any decoration
            ops += self.text(STOP_NOTES[stop_reason])
        if self.options.usage_footer:
            ops += self.text(footer_line(turn.usage) or "")
        ops += [op.StopTyping(turn), op.CloseTurnPrompts(turn.turn_id)]
        # ⏳ after the content: it may wait for a ⏳ in flight; the status line at once.
        ops += [op.DisarmWorking(turn), op.ClearStatus(), op.DeleteInterim(turn)]
        if turn.user_message is not None and self.limits.supports_reactions:
            if turn.working_shown:  # rule 7: a short turn never had ⏳
                ops.append(op.Unreact(turn.user_message, WORKING))
            outcome = DONE
            if stop_reason == "cancelled":
                outcome = STOPPED
            elif stop_reason == "error" or turn.failed:
                outcome = FAILED
            ops.append(op.React(turn.user_message, outcome))
        ops.append(op.Resolve(turn.prompt_message_id, stop_reason))
        return ops

    # --- text and thinking ------------------------------------------------------------------

    def _on_text_delta(self, frame: Frame, p: ev.TextDelta) -> list[Operation]:
        # Outside a turn (no turn_id: against dps-profile §1) a delta is not shown on its own;
        # the block's `done` carries the whole text.
        if self.turn is not None:
            self.turn.text.setdefault(p.content_index, []).append(p.text)
        return []

    def _on_text_done(self, frame: Frame, p: ev.TextDone) -> list[Operation]:
        turn = self.turn
        if turn is None:
            return self.text(p.text)
        if p.content_index in turn.text_sent:
            return []
        turn.text_sent.add(p.content_index)
        return self.text(p.text or "".join(turn.text.get(p.content_index, [])))

    def _on_thinking_delta(self, frame: Frame, p: ev.ThinkingDelta) -> list[Operation]:
        if self.turn is not None and self.options.show_thinking:
            self.turn.thinking.setdefault(p.content_index, []).append(p.text)
        return []

    def _on_thinking_done(self, frame: Frame, p: ev.ThinkingDone) -> list[Operation]:
        turn = self.turn
        text = "".join(turn.thinking.pop(p.content_index, [])) if turn else ""
        if not self.options.show_thinking:
            return []
        if p.redacted:  # never sent, spoilered or not
            return self.text(REDACTED_THINKING)
        return [op.Hidden(THINKING_TITLE, text)] if text.strip() else []

    # --- tools, tasks, plans ----------------------------------------------------------------

    def _on_tool_request(self, frame: Frame, p: ev.ToolInvokeRequest) -> list[Operation]:
        turn = self.turn
        if turn is None:
            return []
        turn.requests[p.invocation_id] = p
        turn.running[p.invocation_id] = p
        return self._refresh_status(turn) + self.progress.show(self._running())

    def _on_tool_result(self, frame: Frame, p: ev.ToolInvokeResult) -> list[Operation]:
        turn = self.turn
        ops: list[Operation] = [op.WentOn(invocation_id=p.invocation_id)]  # answered elsewhere
        request = turn.running.pop(p.invocation_id, None) if turn else None
        if turn is not None and request is None:
            request = turn.requests.get(p.invocation_id)
        tasks = task_list_of(p) if p.status == "success" else None
        if tasks is not None:
            ops += self.progress.list_changed("tasks", render_tasks(tasks), self._running())
        elif turn is not None and request is not None and request.parallel_group_id:
            group_id = request.parallel_group_id
            turn.group_results.setdefault(group_id, []).append(p)
            if turn.group_complete(group_id):
                ops += self._flush_group(turn, group_id)
        else:
            ops += self.text(tool_view([(request, p)]))
        if turn is not None:
            ops += self._refresh_status(turn) + self.progress.show(self._running())
        return ops

    def _flush_group(self, turn: Turn, group_id: str) -> list[Operation]:
        results = turn.group_results.pop(group_id, [])
        if not results:
            return []
        return self.text(tool_view([(turn.requests.get(r.invocation_id), r) for r in results]))

    def _running(self) -> list[ev.ToolInvokeRequest]:
        return list(self.turn.running.values()) if self.turn is not None else []

    # --- the status line, errors, approvals, session events ---------------------------------

    def _on_state(self, frame: Frame, p: ev.StateChanged) -> list[Operation]:
        left = self.agent_state == "awaiting_input" != p.current_state
        self.agent_state = p.current_state  # rule 6: never a chat message
        # When it left awaiting_input, its prompts about no tool were answered, here or not.
        ops: list[Operation] = [op.WentOn(left_awaiting_input=True)] if left else []
        return ops + (self._refresh_status(self.turn) if self.turn is not None else [])

    def _refresh_status(self, turn: Turn) -> list[Operation]:
        if turn.fatal or self.turn is not turn:
            return []
        return [op.Status(self.status_text(turn))]  # coalesced by the driver (rule 6)

    def _on_error(self, frame: Frame, p: ev.AgentError) -> list[Operation]:
        if p.severity == "warning":
            return self.text(f"⚠️ {p.message}")
        ops: list[Operation] = []
        if (turn := self.turn) is not None:
            turn.failed = True
            if p.severity == "fatal":  # G-NS-09: typing ends at once, the error replaces it
                turn.fatal = True
                ops += [op.StopTyping(turn), op.ClearStatus()]
        return ops + self.text(f"❌ **{p.code}**: {p.message}")

    def _on_interaction(self, frame: Frame, p: ev.InteractionRequest) -> list[Operation]:
        turn = self.turn
        tool = turn.requests.get(p.invocation_id) if turn and p.invocation_id else None
        return [op.AskChoice(frame, p, turn.user_id if turn else None, tool)]

    def _on_history(self, frame: Frame, p: ev.History) -> list[Operation]:
        if not p.dropped:
            return []
        return self.text(
            f"⚠️ {p.dropped} events were lost while the connection was down; "
            "this answer may be incomplete."
        )

    def _on_session_error(self, frame: Frame, p: ev.SessionError) -> list[Operation]:
        ops = self.text(error_line(p))  # budget notices read as such (gateway.rendering.usage)
        origin = self.origins.pop(p.ref_message_id or "", None)
        if origin is not None:  # the refused frame was a prompt: mark its message
            ops.append(op.QueueRefused(p.ref_message_id or ""))
            if origin.message is not None and self.limits.supports_reactions:
                ops.append(op.React(origin.message, FAILED))
            ops.append(op.Resolve(p.ref_message_id, "rejected"))
        return ops

    def _on_usage(self, frame: Frame, p: ev.Usage) -> list[Operation]:
        if self.turn is not None:
            self.turn.usage.append(p)  # the footer's figures (gateway.rendering.usage rule 3)
        return self.progress.usage(p, self._running())  # gateway.rendering.usage rule 5


def tool_view(pairs: list[tuple[ev.ToolInvokeRequest | None, ev.ToolInvokeResult]]) -> str:
    """Compact lines first, then each result's diff or other detail (rule 5)."""
    lines = [result_line(request, result) for request, result in pairs]
    details = [d for _, result in pairs if (d := result_detail(result))]
    return "\n".join(lines + details)
