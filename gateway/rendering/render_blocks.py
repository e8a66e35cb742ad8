"""What a turn shows: its text, thinking, tools, task lists and plans, and its status line.

`BlockRendering` is the half of `SessionRenderer` (gateway.rendering.render) that turns content
frames into chat messages; the renderer keeps the frames' dispatch, the turn's life cycle, errors,
approvals and session events. The rule numbers below are gateway.rendering.render's.
"""

from __future__ import annotations

import asyncio

from gateway.approvals.interactions import InteractionFlow
from gateway.platform import ChatPlatform, ConversationRef, MessageRef
from gateway.redaction.redacting_platform import RedactingPlatform
from gateway.rendering.chunker import split_markdown
from gateway.rendering.posting import Poster
from gateway.rendering.render_options import REDACTED_THINKING, STATE_LINES, RenderOptions
from gateway.rendering.status_line import StatusLine
from gateway.rendering.turn import Turn
from gateway.rendering.views import (
    render_plan,
    render_tasks,
    result_detail,
    result_line,
    running_line,
    task_list_of,
)
from gateway.replicas.platform_budget import Priority, call_priority
from rawp import events as ev
from rawp.clock import Clock
from rawp.frames import Frame


class BlockRendering:
    """Content frames → messages, on the state `SessionRenderer` keeps (its `__init__`) and
    through its `_best_effort`."""

    platform: ChatPlatform
    conversation: ConversationRef
    options: RenderOptions
    agent_state: str | None
    _turn: Turn | None
    _clock: Clock
    _poster: Poster
    _status: StatusLine
    _status_lock: asyncio.Lock
    _interactions: InteractionFlow
    _task_message: MessageRef | None
    _plan_message: MessageRef | None

    # --- text and thinking ------------------------------------------------------------------

    async def _on_text_delta(self, frame: Frame, p: ev.TextDelta, turn: Turn | None) -> None:
        # Outside a turn (no turn_id: against dps-profile §1) a delta is not shown on its own;
        # the block's `done` carries the whole text.
        if turn is not None:
            turn.text.setdefault(p.content_index, []).append(p.text)

    async def _on_text_done(self, frame: Frame, p: ev.TextDone, turn: Turn | None) -> None:
        if turn is None:
            await self._send_text(p.text)
            return
        if p.content_index in turn.text_sent:
            return
        turn.text_sent.add(p.content_index)
        await self._send_text(p.text or "".join(turn.text.get(p.content_index, [])))

    async def _on_thinking_delta(self, frame: Frame, p: ev.ThinkingDelta, turn: Turn | None):
        if turn is not None and self.options.show_thinking:
            turn.thinking.setdefault(p.content_index, []).append(p.text)

    async def _on_thinking_done(self, frame: Frame, p: ev.ThinkingDone, turn: Turn | None):
        text = "".join(turn.thinking.pop(p.content_index, [])) if turn else ""
        if not self.options.show_thinking:
            return
        if p.redacted:  # never sent, spoilered or not
            await self._send_text(REDACTED_THINKING)
        elif text.strip():
            await self._poster.send_hidden("💭 Thinking", text)

    async def _send_text(self, text: str) -> None:
        if not text.strip():
            return
        for chunk in self._chunks(text):
            await self._poster.send(chunk)

    def _chunks(self, text: str) -> list[str]:
        """Cut to the platform's limit, redacted first when redaction is on (rule 9)."""
        limit = self.platform.limits.max_message_length
        if isinstance(self.platform, RedactingPlatform):
            return self.platform.chunks(text, limit)
        return split_markdown(text, limit)

    # --- tools, tasks, plans ----------------------------------------------------------------

    async def _on_tool_request(self, frame: Frame, p: ev.ToolInvokeRequest, turn: Turn | None):
        if turn is None:
            return
        turn.requests[p.invocation_id] = p
        turn.running[p.invocation_id] = p
        await self._refresh_status(turn)

    async def _on_tool_result(self, frame: Frame, p: ev.ToolInvokeResult, turn: Turn | None):
        await self._interactions.went_on(invocation_id=p.invocation_id)  # answered elsewhere
        request = turn.running.pop(p.invocation_id, None) if turn else None
        if turn is not None and request is None:
            request = turn.requests.get(p.invocation_id)
        tasks = task_list_of(p) if p.status == "success" else None
        if tasks is not None:
            self._task_message = await self._replace(self._task_message, render_tasks(tasks))
        elif turn is not None and request is not None and request.parallel_group_id:
            group_id = request.parallel_group_id
            turn.group_results.setdefault(group_id, []).append(p)
            if turn.group_complete(group_id):
                await self._flush_group(turn, group_id)
        else:
            await self._send_text(tool_view([(request, p)]))
        if turn is not None:
            await self._refresh_status(turn)

    async def _flush_group(self, turn: Turn, group_id: str) -> None:
        results = turn.group_results.pop(group_id, [])
        if results:
            await self._send_text(
                tool_view([(turn.requests.get(r.invocation_id), r) for r in results])
            )

    async def _on_plan(self, frame: Frame, p: ev.PlanUpdated, turn: Turn | None) -> None:
        self._plan_message = await self._replace(self._plan_message, render_plan(p.entries))

    async def _replace(self, message: MessageRef | None, text: str) -> MessageRef | None:
        """Edit a list in place (G-TASK-06); a list too long for one message is resent."""
        chunks = self._chunks(text)
        if message is not None and len(chunks) == 1 and self.platform.limits.supports_edit:
            await self.platform.edit_message(message, chunks[0])
            return message
        last = None
        for chunk in chunks:
            last = await self._poster.send(chunk)
        return last if len(chunks) == 1 else None

    # --- status line and interim status message ---------------------------------------------

    async def _on_state(self, frame: Frame, p: ev.StateChanged, turn: Turn | None) -> None:
        left = self.agent_state == "awaiting_input" != p.current_state
        self.agent_state = p.current_state  # rule 6: never a chat message
        if left:  # its prompts about no tool were answered, here or elsewhere
            await self._interactions.went_on(left_awaiting_input=True)
        if turn is not None:
            await self._refresh_status(turn)

    def _status_text(self, turn: Turn) -> str | None:
        if self.agent_state == "awaiting_input":  # a tool waiting for approval is not running
            return STATE_LINES["awaiting_input"]
        if turn.running:
            return running_line(list(turn.running.values()))
        return STATE_LINES.get(self.agent_state or "")

    async def _refresh_status(self, turn: Turn) -> None:
        if turn.fatal or self._turn is not turn:
            return
        await self._status.want(self._status_text(turn))  # coalesced (rule 6)
        if turn.status_message is not None:
            async with self._status_lock:
                await self._show_interim(turn)

    async def _set_status(self, text: str | None) -> None:
        await self._best_effort(self.platform.set_status(self.conversation, text))

    async def _tick(self) -> None:
        """Each heartbeat: after `interim_after_s`, show the interim message (G-NS-11/12)."""
        turn = self._turn
        if turn is None or turn.fatal:
            return
        if self._clock.monotonic() - turn.started_at >= self.options.interim_after_s:
            async with self._status_lock:
                if self._turn is turn:  # the turn may have ended while this tick waited
                    await self._show_interim(turn)

    async def _show_interim(self, turn: Turn) -> None:
        text = self._status_text(turn) or "⏳ Still working…"
        if text == turn.status_message_text:
            return
        turn.status_message_text = text
        # Issue 19 §5: the status line is a status in the platform budget, after any content.
        with call_priority(Priority.STATUS):
            if turn.status_message is not None and self.platform.limits.supports_edit:
                await self._best_effort(self.platform.edit_message(turn.status_message, text))
                return
            if turn.status_message is not None:
                await self._best_effort(self.platform.delete_message(turn.status_message))
            # Keyed by turn, not by frame: a heartbeat tick (a timer) may post it.
            key = interim_key(turn, turn.interim_posts)
            turn.interim_posts += 1
            turn.status_message = await self._poster.send(text, key=key)

    async def _typing(self) -> None:
        await self.platform.trigger_typing(self.conversation)


def interim_key(turn: Turn, index: int) -> str:
    """The post key of a turn's `index`-th interim status message (gateway.rendering.posting)."""
    return f"interim/{turn.turn_id}/{index}"


def tool_view(pairs: list[tuple[ev.ToolInvokeRequest | None, ev.ToolInvokeResult]]) -> str:
    """Compact lines first, then each result's diff or other detail (rule 5)."""
    lines = [result_line(request, result) for request, result in pairs]
    details = [d for _, result in pairs if (d := result_detail(result))]
    return "\n".join(lines + details)
