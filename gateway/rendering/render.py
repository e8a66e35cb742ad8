"""The turn renderer: one session's DPS frames → messages on a ChatPlatform (old §8.3, K-16).

Feed it every frame of the session, in order; it keeps one `Turn` at a time. What each frame
shows is decided by its pure core, `RenderCore` (gateway.rendering.render_core), which returns
operations (gateway.rendering.operations) and does no I/O; `SessionRenderer` is the driver that
performs them through the `Poster` and the platform, owns the timers (typing, the status line's
coalescing and the interim status message of gateway.rendering.status_line, ⏳) and looks up and
records where a turn's prompt came from. Rules:

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
   once all of them finished; diffs follow their line (gateway.rendering.views). The turn's
   task list and plan are one progress message (issue 30 §4), posted when the first list
   arrives and edited in place (G-TASK-06) as the lists, the tool running now ("🔧 Running:
   Bash (npm test)") and the context in use change; the edits are coalesced to one per
   `status_every_s` (gateway.rendering.status_line), and at turn end it is edited to the final
   task state. Once it is shown the interim status message (rule 6) gives way to it.
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
11. A change of the agent's mode (`session.capabilities` `current_mode`) is a line "Mode: …"
    in the thread (`ModeLine`, gateway.rendering.render_core), and the mode shown is stored
    for a restarted gateway; a change of its model (`current_model`) is "Model: …" the same
    way (`ModelLine`), with the models offered stored too. The modes the agent offers are a
    row of buttons on one message, edited as the mode changes (gateway.sessions.mode_buttons).

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
from collections.abc import Awaitable
from typing import Any

from gateway.approvals.audit import AuditSink, no_audit
from gateway.approvals.interactions import InteractionFlow, SendFrame
from gateway.platform import ChatPlatform, ConversationRef, MessageRef
from gateway.redaction.redact import Redactor
from gateway.redaction.redacting_platform import RedactingPlatform
from gateway.rendering import operations as op
from gateway.rendering.chunker import split_markdown
from gateway.rendering.operations import Operation
from gateway.rendering.posting import Poster
from gateway.rendering.render_core import ModeLine, ModelLine, RenderCore, chat_name
from gateway.rendering.render_options import PromptOrigin, RenderOptions
from gateway.rendering.status_line import InterimStatus, ProgressEdits, StatusLine
from gateway.rendering.turn import Turn
from gateway.rendering.typing import Sleep, TypingHeartbeat
from gateway.rendering.working_mark import WorkingMark
from gateway.replicas.platform_budget import Priority, call_priority
from gateway.sessions.busy import QueueMarker
from gateway.sessions.mode_buttons import ModeButtons
from gateway.sessions.prompt import CommandCache
from gateway.storage.conversation_store import ConversationStore
from rawp import events as ev
from rawp.clock import SYSTEM_CLOCK, Clock
from rawp.frames import Frame
from runtime.tasks import TaskOwner

log = logging.getLogger(__name__)

__all__ = ["RenderOptions", "SessionRenderer"]

# The frames the driver handles itself, beside those its core renders (`RenderCore.frame_types`).
DRIVER_FRAMES = frozenset({"session.turn.start", "agent.commands.publish", "session.capabilities"})


class SessionRenderer:
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
        self.session_id = session_id
        self.conversation = conversation
        self.audit = audit  # where approval outcomes are reported (gateway.approvals.audit)
        self._clock, self._sleep, self._store = clock, sleep, store
        # The session's `.env` fingerprints, kept by the conversation layer across renderers: a
        # link resuming from a cursor is not greeted again, so a new renderer learns them here.
        self._fingerprints = fingerprints if fingerprints is not None else {}
        # Rule 9: the one seam every text of this session leaves through.
        self.redactor = Redactor() if self.options.redact else None
        if self.redactor is not None:
            self.redactor.use_fingerprints(self._fingerprints.get(session_id))
            platform = RedactingPlatform(platform, self.redactor)
        self.platform = platform
        self.core = RenderCore(
            self.options, platform.limits, platform_name=platform.name, chunks=self._chunks
        )
        self.commands = CommandCache()
        self.mode_line = ModeLine()  # the agent's mode as the thread shows it
        self.model_line = ModelLine()  # …and its model
        self._finished: dict[str, asyncio.Future[str]] = {}  # prompt message_id → stop_reason
        self._closed = False
        self._tasks = TaskOwner(f"session {session_id} renderer", log)
        self._poster = Poster(platform, conversation, session_id, store)
        self.mode_buttons = ModeButtons(self._poster)  # rule 11: the modes as buttons
        self._build_collaborators(send_frame)

    def _build_collaborators(self, send_frame: SendFrame) -> None:
        """What the driver performs operations through, beside the `Poster`: the busy queue,
        the status line (rule 6: one change per interval at most), the ⏳ mark (rule 7), the
        interim status message (rule 6) and the approval flow (rule 8)."""
        platform, options, clock, sleep = self.platform, self.options, self._clock, self._sleep
        conversation, session_id, tasks = self.conversation, self.session_id, self._tasks
        self.queue = QueueMarker(  # gateway.sessions.busy
            platform,
            conversation,
            self._best_effort,
            session_id=session_id,
            send_frame=send_frame,
            store=self._store,
        )
        self._status = StatusLine(
            self._set_status, tasks, options.status_every_s, clock=clock, sleep=sleep
        )
        self._working = WorkingMark(self._react, tasks, options.working_after_s, sleep)
        self._progress = ProgressEdits(  # rule 5
            platform.edit_message, tasks, options.status_every_s, clock=clock, sleep=sleep
        )
        self._interim = InterimStatus(
            platform,
            self._poster,
            current=lambda: self.core.turn,
            status_text=self.core.status_text,
            clock=clock,
            after_s=options.interim_after_s,
            best_effort=self._best_effort,
        )
        self._interactions = InteractionFlow(
            platform,
            conversation,
            session_id,
            send_frame,
            self._poster,
            tasks,
            approver_ids=options.approver_ids,
            clock=clock,
            default_timeout_s=options.approval_timeout_s,
            audit=self.audit,
        )

    # --- the public surface -----------------------------------------------------------------

    @property
    def turn(self) -> Turn | None:
        return self.core.turn

    @property
    def settled(self) -> bool:
        """Nothing rendered so far waits for a later frame (see the module docstring)."""
        return self.core.settled

    def expect_prompt(
        self, prompt_message_id: str, message: MessageRef | None, user_id: str | None
    ) -> asyncio.Future[str]:
        """Remember which chat message sent the prompt frame `prompt_message_id`.

        The future resolves when that prompt's turn has been rendered to its end, with the
        turn's `stop_reason` ("rejected" when a `session.error` refused the prompt, "closed"
        when the renderer closed first): a console reads its next line only after it.
        """
        self.core.origins[prompt_message_id] = PromptOrigin(message, user_id)
        self.queue.expect(prompt_message_id, message, self.core.turn is not None, user_id)
        future = asyncio.get_running_loop().create_future()
        self._finished[prompt_message_id] = future
        return future

    async def feed(self, frame: Frame) -> None:
        shown = frame.type in DRIVER_FRAMES or frame.type in self.core.frame_types
        if not shown or not frame.known:
            return  # unknown types: nothing to show
        if not self._tasks.running and not self._closed:
            await self._tasks.start()
        self._poster.begin(frame.message_id)
        if frame.type == "session.turn.start":
            await self._on_turn_start(frame.payload)
            return
        turn = self.core.turn
        if frame.turn_id is not None:
            if self.core.has_ended(frame.turn_id):
                return  # a straggler of a finished turn
            if turn is None or turn.turn_id != frame.turn_id:
                turn = await self._start_turn(frame.turn_id, None)
        p = frame.payload
        if frame.type == "agent.commands.publish":
            self.commands.update(p)  # G-CMD-07/34: cached, replaced whole on each publish
        elif frame.type == "session.capabilities":
            self._use_fingerprints(p)
            await self._show_mode(p)
            await self._show_model(p)
            await self.mode_buttons.seen(p)
        elif frame.type == "session.error" and self.queue.lost_race(p):
            return  # an interrupt's cancel after its turn ended (gateway.sessions.busy)
        elif frame.type == "session.turn.end" and turn is not None:
            # Issue 19 §5: a turn's last posts go before other conversations' chunks and
            # statuses in the shared platform budget (gateway.replicas.platform_budget rule 2).
            with call_priority(Priority.ANSWER):
                await self._perform(self.core.render(frame))
        else:
            await self._perform(self.core.render(frame))

    async def _show_mode(self, caps: ev.Capabilities) -> None:
        """The "Mode: …" line (gateway.rendering.render_core), kept for a restarted gateway."""
        line = self.mode_line.seen(caps)
        if line is None:
            return
        await self._perform(self.core.text(line))
        if self._store is not None and self.mode_line.shown is not None:
            name = chat_name(self.mode_line.shown, caps.modes)
            await self._store.set_session_mode(self.session_id, name)

    async def _show_model(self, caps: ev.Capabilities) -> None:
        """The "Model: …" line (render_core `ModelLine`); what the agent offers and is on is
        stored for `/rawp model` on any replica, and a model shown after a change as the one
        a restarted gateway sends again."""
        line = self.model_line.seen(caps)
        if caps.models is not None and self._store is not None:
            noted = ([m.id for m in caps.models], caps.current_model)
            if noted != self.model_line.noted:
                self.model_line.noted = noted
                await self._store.note_models(self.session_id, *noted)
        if line is None:
            return
        await self._perform(self.core.text(line))
        if self._store is not None and caps.current_model is not None:
            await self._store.choose_model(self.session_id, caps.current_model)

    async def close(self) -> None:
        """Stop typing and close open prompts (the session ended or the gateway stops)."""
        self._closed = True
        if self.core.turn and self.core.turn.heartbeat:
            await self.core.turn.heartbeat.stop()
        await self._interactions.close_all()
        await self._tasks.close()  # nothing the renderer started outlives it
        for prompt_message_id in list(self._finished):
            self._resolve(prompt_message_id, "closed")

    # --- turn life cycle --------------------------------------------------------------------

    async def _on_turn_start(self, p: ev.TurnStart) -> None:
        queued = await self.queue.started(p.prompt_message_id, p.turn_id)  # 🕒 off before ⏳ on
        origin = self.core.origins.pop(p.prompt_message_id, None)
        if origin is None and queued is not None:  # queued before a gateway restart
            origin = PromptOrigin(queued.message, queued.user_id)
        turn = self.core.turn
        if turn is not None and turn.turn_id == p.turn_id:
            if turn.adopt_prompt(p.prompt_message_id, origin) and origin is not None:
                await self._remember_origin(p.turn_id, origin)  # started early by a stray frame
                self._working.arm(turn, self._is_current)
            return
        if self.core.has_ended(p.turn_id):
            return
        turn = await self._start_turn(p.turn_id, origin)
        turn.prompt_message_id = p.prompt_message_id

    async def _start_turn(self, turn_id: str, origin: PromptOrigin | None) -> Turn:
        if self.core.turn is not None:  # its end never came: finish it before the next one
            await self._perform(self.core.end_turn("end_turn"))
        started_at = self._clock.monotonic()
        joined = origin is None
        if origin:
            await self._remember_origin(turn_id, origin)
        else:  # joined midway, maybe after a gateway restart: the store may know it
            origin = await self._stored_origin(turn_id)
        turn = self.core.open_turn(turn_id, origin, started_at=started_at, joined=joined)
        turn.heartbeat = TypingHeartbeat(
            self._typing,
            self.platform.limits.typing_refresh_s,
            self._tasks,
            sleep=self._sleep,
            on_tick=self._interim.tick,
        )
        await self._status.start()
        await turn.heartbeat.start()  # rule 2, G-NS-04
        self._working.arm(turn, self._is_current)  # rule 7
        return turn

    def _is_current(self, turn: Turn) -> bool:
        return self.core.turn is turn

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

    def _use_fingerprints(self, p: ev.Capabilities) -> None:
        if p.secret_fingerprints is not None:
            self._fingerprints[self.session_id] = p.secret_fingerprints
        if self.redactor is not None:  # rule 9: the workspace's `.env`, as fingerprints
            self.redactor.use_fingerprints(p.secret_fingerprints)

    # --- performing the core's operations ---------------------------------------------------

    async def _perform(self, operations: list[Operation]) -> None:
        for operation in operations:
            await self._perform_one(operation)

    async def _perform_one(self, operation: Operation) -> None:
        platform = self.platform
        match operation:
            case op.Post(text, key, keep):
                ref = await self._poster.send(text, key)
                if keep is not None:
                    self.core.keep(keep, ref)
                    await self._progress_posted(ref, text)
            case op.Edit(message, text, coalesce):
                if coalesce:  # rule 5: the progress message during the turn
                    await self._progress.want(message, text)
                else:
                    await self._progress.now(message, text)
            case op.Hidden(title, text):
                await self._poster.send_hidden(title, text)
            case op.Upload():
                await self._upload(operation)
            case op.React(message, emoji):
                await self._best_effort(platform.add_reaction(message, emoji))
            case op.Unreact(message, emoji):
                await self._best_effort(platform.remove_reaction(message, emoji))
            case op.Status(text):
                await self._status.want(text)  # coalesced (rule 6)
                if self.core.turn is not None:
                    await self._interim.follow(self.core.turn)
            case op.ClearStatus():
                await self._status.clear()  # at once: a held status is dropped (rule 6)
            case op.StopTyping(turn):
                if turn.heartbeat:
                    await turn.heartbeat.stop()
            case op.AskChoice(frame, request, user_id, tool):
                await self._interactions.open(frame, request, user_id, tool)
            case op.WentOn(invocation_id, left):
                await self._interactions.went_on(
                    invocation_id=invocation_id, left_awaiting_input=left
                )
            case op.CloseTurnPrompts(turn_id):
                await self._interactions.close_turn(turn_id)
            case op.DisarmWorking(turn):
                await self._working.disarm(turn)
            case op.DeleteInterim(turn):
                await self._interim.delete(turn)
            case op.QueueRefused(prompt_message_id):
                await self.queue.refused(prompt_message_id)
            case op.Resolve(prompt_message_id, outcome):
                self._resolve(prompt_message_id, outcome)

    async def _progress_posted(self, message: MessageRef, text: str) -> None:
        """Rule 5: the progress message is up; the interim status message gives way to it."""
        self._progress.posted(message, text)
        if (turn := self.core.turn) is not None:
            await self._interim.retire(turn)

    async def _upload(self, upload: op.Upload) -> None:
        """gateway.rendering.uploads rule 7: a refused upload is said, the session goes on."""
        try:
            await self._poster.upload(upload.name, upload.mime_type, upload.data)
        except Exception:  # the platform refused it (a 413, a missing scope)
            log.warning("uploading %s failed", upload.name, exc_info=True)
            await self._perform(self.core.text(upload.refused_text))

    def _resolve(self, prompt_message_id: str | None, outcome: str) -> None:
        future = self._finished.pop(prompt_message_id or "", None)
        if future is not None and not future.done():
            future.set_result(outcome)

    def _chunks(self, text: str) -> list[str]:
        """Cut to the platform's limit, redacted first when redaction is on (rule 9)."""
        limit = self.platform.limits.max_message_length
        if isinstance(self.platform, RedactingPlatform):
            return self.platform.chunks(text, limit)
        return split_markdown(text, limit)

    # --- decorations ------------------------------------------------------------------------

    async def _set_status(self, text: str | None) -> None:
        await self._best_effort(self.platform.set_status(self.conversation, text))

    async def _typing(self) -> None:
        await self.platform.trigger_typing(self.conversation)

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
