"""The turn renderer: one session's DPS frames → messages on a ChatPlatform (old §8.3, K-16).

Feed it every frame of the session, in order; it keeps one `Turn` at a time. The handlers of
content frames (text, thinking, tools, plans, the status line: rules 3–6) are its
`BlockRendering` half (gateway.rendering.render_blocks). Rules:

1. Each frame is rendered once: the link (gateway.edge_link rule 3, the FrameLink contract)
   de-duplicates by `message_id`, so a `session.history` replay after a reconnect reaches the
   renderer without repeats (dps-profile §8). A replay with `dropped > 0` gets a gap notice.
2. Typing runs from `session.turn.start` to `session.turn.end` (K-16), refreshed inside the
   platform's expiry (gateway.rendering.typing); a fatal `agent.error` stops it at once (G-NS-09).
3. Text is buffered per `content_index` and each block is sent, chunked to the platform limit,
   when its `agent.text.done` arrives (G-NS-14/15); blocks whose `done` never came are sent at
   turn end from their deltas.
4. Thinking is not shown unless `show_thinking`; then it goes out in the platform's hidden
   form. Redacted thinking is never sent, only a placeholder (A-36).
5. Each finished tool is one compact line; tools of one `parallel_group_id` share one message
   once all of them finished; diffs and task lists follow their line (gateway.rendering.views). A
   task list or plan is edited in place when it changes (G-TASK-06).
6. `agent.state.changed` and running tools only ever change the status line (A-41), never the
   chat, at most once per `status_every_s` (gateway.rendering.status_line); after `interim_after_s`
   (30 s, G-NS-11/12) an interim status message names the running tool, is edited as it
   changes, and is deleted when the turn ends.
7. The user's message gets ⏳ once its turn has run `working_after_s`
   (gateway.rendering.working_mark) and ✅, ❌ (error) or ⏹ (cancelled) at the end; a prompt
   sent while another turn runs gets 🕒 until its own turn starts (gateway.sessions.busy).
8. `agent.interaction.request` becomes buttons (gateway.approvals.interactions), told which of the
   turn's tools it is about (its `invocation_id`) and where to report its outcome (`audit`).
9. Credentials never reach the chat (issue 15 §3): unless the session's node is exempt, the
   platform is wrapped in a `RedactingPlatform` (gateway.redaction.redacting_platform), through
   which every text leaves, and long text is redacted before it is chunked. The `.env` values are
   known by the fingerprints of the session's `session.capabilities` (rawp.fingerprints).
   The frames themselves — what the agent and the master see — are never changed.
10. Files the agent sends (`agent.file`) are put together and uploaded by gateway.rendering.uploads;
    one whose pieces are still coming keeps the renderer unsettled.

A frame whose `turn_id` names no known turn starts one (the gateway may have reconnected in
the middle of a turn); a frame of a turn that already ended is dropped.

Crash safety (issue 14 §4): every message goes out through a `Poster` (gateway.rendering.posting)
under a key made from the frame being rendered, so frames rendered again after a gateway restart
post only what is missing. `settled` says whether the frames rendered so far left anything
pending (text buffered from deltas, running tools, tool groups being collected): only after a
settled frame may the session's durable cursor move (gateway.sessions.live), so what a restart
replays rebuilds that state; which chat message started a turn is stored too, so its ⏳ still
becomes ✅ after a restart. The typing heartbeat, the held status line, the ⏳ timer and
the approval waits are tasks of the renderer's own `TaskOwner`, started with the first frame
and closed by `close()`; nothing at turn end waits on a timer (issue 19 §6).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from gateway.approvals.audit import AuditSink, no_audit
from gateway.approvals.interactions import InteractionFlow, SendFrame
from gateway.platform import ChatPlatform, ConversationRef, MessageRef
from gateway.redaction.redact import Redactor
from gateway.redaction.redacting_platform import RedactingPlatform
from gateway.rendering.posting import Poster
from gateway.rendering.render_blocks import BlockRendering, interim_key
from gateway.rendering.render_options import STOP_NOTES, PromptOrigin, RenderOptions
from gateway.rendering.status_line import StatusLine
from gateway.rendering.turn import DONE, FAILED, STOPPED, WORKING, Turn
from gateway.rendering.typing import Sleep, TypingHeartbeat
from gateway.rendering.uploads import FileUploads
from gateway.rendering.usage import error_line, footer_line
from gateway.rendering.working_mark import WorkingMark
from gateway.replicas.platform_budget import Priority, call_priority
from gateway.sessions.busy import QueueMarker
from gateway.sessions.prompt import CommandCache
from gateway.storage.conversation_store import ConversationStore
from rawp import events as ev
from rawp.clock import SYSTEM_CLOCK, Clock
from rawp.frames import Frame
from runtime.tasks import TaskOwner

log = logging.getLogger(__name__)


class SessionRenderer(BlockRendering):
    def __init__(
        self,
        platform: ChatPlatform,
        conversation: ConversationRef,
        session_id: str,
        *,
        send_frame: SendFrame,
        options: RenderOptions | None = None,
        clock: Clock = SYSTEM_CLOCK,
        sleep: Sleep = asyncio.sleep,
        store: ConversationStore | None = None,
        audit: AuditSink = no_audit,
        fingerprints: dict[str, ev.SecretFingerprints] | None = None,
    ) -> None:
        self.options = options or RenderOptions()
        # Rule 9: the one seam every text of this session leaves through.
        self.redactor = Redactor() if self.options.redact else None
        # The session's `.env` fingerprints, kept by the conversation layer across renderers: a
        # link resuming from a cursor is not greeted again, so a new renderer learns them here.
        self._fingerprints = fingerprints if fingerprints is not None else {}
        if self.redactor is not None:
            self.redactor.use_fingerprints(self._fingerprints.get(session_id))
        if self.redactor is not None:
            platform = RedactingPlatform(platform, self.redactor)
        self.platform = platform
        self.conversation = conversation
        self.queue = QueueMarker(  # gateway.sessions.busy
            platform,
            conversation,
            self._best_effort,
            session_id=session_id,
            send_frame=send_frame,
            store=store,
        )
        self.session_id = session_id
        self.commands = CommandCache()
        self.agent_state: str | None = None
        self._clock = clock
        self._sleep = sleep
        self._turn: Turn | None = None
        self._ended: deque[str] = deque(maxlen=256)
        self._origins: dict[str, PromptOrigin] = {}
        self._finished: dict[str, asyncio.Future[str]] = {}  # prompt message_id → stop_reason
        self._task_message: MessageRef | None = None
        self._plan_message: MessageRef | None = None
        self._status_lock = asyncio.Lock()
        self._store = store
        self.audit = audit  # where approval outcomes are reported (gateway.approvals.audit)
        self._poster = Poster(platform, conversation, session_id, store)
        self._files = FileUploads(
            platform, self._poster, self._send_text, self.options.max_file_bytes
        )
        self._tasks = TaskOwner(f"session {session_id} renderer", log)
        self._status = StatusLine(  # rule 6: one status change per interval at most
            self._set_status,
            self._tasks,
            self.options.status_every_s,
            clock=clock,
            sleep=sleep,
        )
        self._working = WorkingMark(self._react, self._tasks, self.options.working_after_s, sleep)
        self._closed = False
        self._interactions = InteractionFlow(
            platform,
            conversation,
            session_id,
            send_frame,
            self._poster,
            self._tasks,
            approver_ids=self.options.approver_ids,
            clock=clock,
            default_timeout_s=self.options.approval_timeout_s,
            audit=audit,
        )
        self._handlers: dict[str, Callable[[Frame, Any, Turn | None], Awaitable[None]]] = {
            "session.turn.start": self._on_turn_start,
            "session.turn.end": self._on_turn_end,
            "agent.text.delta": self._on_text_delta,
            "agent.text.done": self._on_text_done,
            "agent.thinking.delta": self._on_thinking_delta,
            "agent.thinking.done": self._on_thinking_done,
            "agent.state.changed": self._on_state,
            "agent.error": self._on_error,
            "agent.file": lambda frame, p, turn: self._files.on_chunk(p),
            "agent.interaction.request": self._on_interaction,
            "agent.plan.updated": self._on_plan,
            "agent.commands.publish": self._on_commands,
            "tool.invoke.request": self._on_tool_request,
            "tool.invoke.result": self._on_tool_result,
            "session.history": self._on_history,
            "session.error": self._on_session_error,
            "session.capabilities": self._on_capabilities,
            "session.usage": self._on_usage,
        }

    # --- the public surface -----------------------------------------------------------------

    @property
    def turn(self) -> Turn | None:
        return self._turn

    @property
    def settled(self) -> bool:
        """Nothing rendered so far waits for a later frame (see the module docstring)."""
        if self._files.pending:  # a file's pieces are held in memory only
            return False
        turn = self._turn
        if turn is None:
            return True
        return not (turn.unsent_text() or turn.thinking or turn.running or turn.group_results)

    def expect_prompt(
        self, prompt_message_id: str, message: MessageRef | None, user_id: str | None
    ) -> asyncio.Future[str]:
        """Remember which chat message sent the prompt frame `prompt_message_id`.

        The future resolves when that prompt's turn has been rendered to its end, with the
        turn's `stop_reason` ("rejected" when a `session.error` refused the prompt, "closed"
        when the renderer closed first): a console reads its next line only after it.
        """
        self._origins[prompt_message_id] = PromptOrigin(message, user_id)
        self.queue.expect(prompt_message_id, message, self._turn is not None, user_id)
        future = asyncio.get_running_loop().create_future()
        self._finished[prompt_message_id] = future
        return future

    def _resolve(self, prompt_message_id: str | None, outcome: str) -> None:
        future = self._finished.pop(prompt_message_id or "", None)
        if future is not None and not future.done():
            future.set_result(outcome)

    async def feed(self, frame: Frame) -> None:
        handler = self._handlers.get(frame.type)
        if handler is None or not frame.known:
            return  # usage, capabilities, unknown types: nothing to show
        if not self._tasks.running and not self._closed:
            await self._tasks.start()
        self._poster.begin(frame.message_id)
        turn = self._turn
        if frame.turn_id is not None and frame.type != "session.turn.start":
            if frame.turn_id in self._ended:
                return  # a straggler of a finished turn
            if turn is None or turn.turn_id != frame.turn_id:
                turn = await self._start_turn(frame.turn_id, None)
        await handler(frame, frame.payload, turn)

    async def close(self) -> None:
        """Stop typing and close open prompts (the session ended or the gateway stops)."""
        self._closed = True
        if self._turn and self._turn.heartbeat:
            await self._turn.heartbeat.stop()
        await self._interactions.close_all()
        await self._tasks.close()  # nothing the renderer started outlives it
        for prompt_message_id in list(self._finished):
            self._resolve(prompt_message_id, "closed")

    # --- turn life cycle --------------------------------------------------------------------

    async def _on_turn_start(self, frame: Frame, p: ev.TurnStart, _: Turn | None) -> None:
        queued = await self.queue.started(p.prompt_message_id, p.turn_id)  # 🕒 off before ⏳ on
        origin = self._origins.pop(p.prompt_message_id, None)
        if origin is None and queued is not None:  # queued before a gateway restart
            origin = PromptOrigin(queued.message, queued.user_id)
        if self._turn and self._turn.turn_id == p.turn_id:
            self._turn.prompt_message_id = p.prompt_message_id
            if origin and self._turn.user_message is None:  # started early by a stray frame
                self._turn.user_message, self._turn.user_id = origin.message, origin.user_id
                await self._remember_origin(p.turn_id, origin)
                self._working.arm(self._turn, self._is_current)
            return
        if p.turn_id in self._ended:
            return
        turn = await self._start_turn(p.turn_id, origin)
        turn.prompt_message_id = p.prompt_message_id

    async def _start_turn(self, turn_id: str, origin: PromptOrigin | None) -> Turn:
        if self._turn is not None:  # its end never came: finish it before the next one
            await self._end_turn(self._turn, "end_turn")
        turn = Turn(turn_id, started_at=self._clock.monotonic())
        # Each turn gets its own task list and plan message, at the bottom where it is seen.
        self._task_message = self._plan_message = None
        if origin:
            await self._remember_origin(turn_id, origin)
        else:  # joined midway, maybe after a gateway restart: the store may know it
            origin = await self._stored_origin(turn_id)
            # The gateway that started it may have put ⏳ on already: take it off at the end.
            turn.working_shown = origin is not None
        if origin:
            turn.user_message, turn.user_id = origin.message, origin.user_id
        turn.heartbeat = TypingHeartbeat(
            self._typing,
            self.platform.limits.typing_refresh_s,
            self._tasks,
            sleep=self._sleep,
            on_tick=self._tick,
        )
        self._turn = turn
        await self._status.start()
        await turn.heartbeat.start()  # rule 2, G-NS-04
        self._working.arm(turn, self._is_current)  # rule 7
        return turn

    def _is_current(self, turn: Turn) -> bool:
        return self._turn is turn

    async def _remember_origin(self, turn_id: str, origin: PromptOrigin) -> None:
        if self._store is not None:
            message_id = origin.message.message_id if origin.message else None
            await self._store.record_turn_origin(
                self.session_id, turn_id, message_id, origin.user_id
            )

    async def _stored_origin(self, turn_id: str) -> PromptOrigin | None:
        if self._store is None:
            return None
        message_id, user_id = await self._store.turn_origin(self.session_id, turn_id)
        if message_id is None and user_id is None:
            return None
        message = MessageRef(self.conversation, message_id) if message_id else None
        return PromptOrigin(message, user_id)

    async def _on_turn_end(self, frame: Frame, p: ev.TurnEnd, turn: Turn | None) -> None:
        if turn is not None:
            # Issue 19 §5: a turn's last posts go before other conversations' chunks and
            # statuses in the shared platform budget (gateway.replicas.platform_budget rule 2).
            with call_priority(Priority.ANSWER):
                await self._end_turn(turn, p.stop_reason)

    async def _end_turn(self, turn: Turn, stop_reason: str) -> None:
        self._turn = None
        self._ended.append(turn.turn_id)
        for text in turn.unsent_text():  # rule 3: the deltas stand in for a missing done
            await self._send_text(text)
        await self._files.turn_ended()
        for group_id in list(turn.group_results):
            await self._flush_group(turn, group_id)
        if stop_reason in STOP_NOTES:  # the turn's last content, before any decoration
            await self._send_text(STOP_NOTES[stop_reason])
        if self.options.usage_footer:
            await self._send_text(footer_line(turn.usage) or "")
        if turn.heartbeat:
            await turn.heartbeat.stop()
        await self._interactions.close_turn(turn.turn_id)
        await self._working.disarm(turn)  # after the content: it may wait for a ⏳ in flight
        await self._status.clear()  # at once: a held status is dropped (rule 6)
        async with self._status_lock:
            # One posted before a gateway restart is known by its key only.
            status = turn.status_message or await self._poster.recorded(interim_key(turn, 0))
            if status is not None:
                await self._best_effort(self.platform.delete_message(status))
        if turn.user_message is not None and self.platform.limits.supports_reactions:
            if turn.working_shown:  # rule 7: a short turn never had ⏳
                await self._best_effort(self.platform.remove_reaction(turn.user_message, WORKING))
            outcome = DONE
            if stop_reason == "cancelled":
                outcome = STOPPED
            elif stop_reason == "error" or turn.failed:
                outcome = FAILED
            await self._react(turn.user_message, outcome)
        self._resolve(turn.prompt_message_id, stop_reason)

    # --- errors, approvals, session events --------------------------------------------------

    async def _on_error(self, frame: Frame, p: ev.AgentError, turn: Turn | None) -> None:
        if p.severity == "warning":
            await self._send_text(f"⚠️ {p.message}")
            return
        if turn is not None:
            turn.failed = True
            if p.severity == "fatal":  # G-NS-09: typing ends at once, the error replaces it
                turn.fatal = True
                if turn.heartbeat:
                    await turn.heartbeat.stop()
                await self._status.clear()
        await self._send_text(f"❌ **{p.code}**: {p.message}")

    async def _on_interaction(self, frame: Frame, p: ev.InteractionRequest, turn: Turn | None):
        tool = turn.requests.get(p.invocation_id) if turn and p.invocation_id else None
        await self._interactions.open(frame, p, turn.user_id if turn else None, tool)

    async def _on_commands(self, frame: Frame, p: ev.CommandsPublish, _: Turn | None) -> None:
        self.commands.update(p)  # G-CMD-07/34: cached, replaced whole on each publish

    async def _on_capabilities(self, frame: Frame, p: ev.Capabilities, _: Turn | None) -> None:
        if p.secret_fingerprints is not None:
            self._fingerprints[self.session_id] = p.secret_fingerprints
        if self.redactor is not None:  # rule 9: the workspace's `.env`, as fingerprints
            self.redactor.use_fingerprints(p.secret_fingerprints)

    async def _on_history(self, frame: Frame, p: ev.History, _: Turn | None) -> None:
        if p.dropped:
            await self._send_text(
                f"⚠️ {p.dropped} events were lost while the connection was down; "
                "this answer may be incomplete."
            )

    async def _on_session_error(self, frame: Frame, p: ev.SessionError, _: Turn | None) -> None:
        # An interrupt's cancel after its turn ended (gateway.sessions.busy).
        if self.queue.lost_race(p):
            return
        # Budget notices read as such (gateway.rendering.usage).
        await self._send_text(error_line(p))
        origin = self._origins.pop(p.ref_message_id or "", None)
        if origin is not None:  # the refused frame was a prompt: mark its message
            await self.queue.refused(p.ref_message_id or "")
            await self._react(origin.message, FAILED)
            self._resolve(p.ref_message_id, "rejected")

    async def _on_usage(self, frame: Frame, p: ev.Usage, turn: Turn | None) -> None:
        if turn is not None:
            turn.usage.append(p)  # the footer's figures (gateway.rendering.usage rule 3)

    # --- helpers ----------------------------------------------------------------------------

    async def _react(self, message: MessageRef | None, emoji: str) -> None:
        if message is not None and self.platform.limits.supports_reactions:
            await self._best_effort(self.platform.add_reaction(message, emoji))

    @staticmethod
    async def _best_effort(operation: Awaitable[Any]) -> None:
        """Decorations (typing, status, reactions) must never stop the content."""
        try:
            await operation
        except Exception:
            log.warning("platform decoration failed", exc_info=True)
