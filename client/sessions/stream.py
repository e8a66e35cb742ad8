"""The data plane of one attached socket (RAWP §5.3, DPS §6, §15, §16.1).

`serve` drains the session's outbox into the socket and reads the master's frames:

* a frame that cannot be read gets `session.error` and the loop goes on (dps-profile §1);
* `control.prompt.request` is parsed, validated and queued (client.sessions.prompts,
  dps-profile §6);
* `control.prompt.cancel` stops the running turn (`stop_reason: cancelled`);
* `control.interaction.response` goes to the agent;
* `control.context.compact` runs the agent's own `compact` command (`/compact` with the
  instructions) as a turn, queued like a prompt, when the agent published one; otherwise, and
  for an agent without it, `session.error` `UNSUPPORTED_CONTROL`;
* `control.mode.set` goes to the agent in the session's own task (an ACP agent may have to
  start first); a mode it cannot take gets `session.error` with its reason
  (client.agents.modes), a change is announced by the session's `session.capabilities`;
  `control.model.set` and `control.config.set` the same way;
* `tool.invoke.request` runs only a tool published with `direct: true`; anything else gets
  `tool.invoke.result` `TOOL_NOT_PUBLISHED` (dps-profile §5, X-SEC-04);
* `control.file.search` runs as a task keyed by `query_id`; `control.file.search.cancel`
  cancels it and no candidates are ever sent for that `query_id` afterwards (A-30).
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from typing import Any, Protocol

from client.agents.modes import ModeRefused
from client.files.paths import PathGuard
from client.sessions.outbox import Outbox
from client.sessions.prompts import PromptRefused, build_prompt
from client.sessions.session import Session
from rawp.errors import FrameError
from rawp.events import (
    ConfigSet,
    ContextCompact,
    FileSearch,
    FileSearchCancel,
    InteractionResponse,
    ModelSet,
    ModeSet,
    PromptCancel,
    PromptRequest,
    ToolInvokeRequest,
)
from rawp.frames import Frame, parse_frame, session_error_frame
from runtime.tasks import TaskOwner, race

log = logging.getLogger(__name__)

MAX_RESULTS = 50  # larger requests are clamped
CANCELLED_MEMORY = 1024
SEND_BATCH_BYTES = 256 * 1024  # at most this much taken off the outbox per write (one frame more)


class Socket(Protocol):
    """What the data plane needs of a socket. One that also has `send_many(texts)` (each text
    its own frame, written together) gets every frame queued at once (client.api.socket)."""

    async def send(self, data: str) -> None: ...
    async def receive(self) -> str | bytes: ...


class SearchService(Protocol):
    async def search(self, request: FileSearch, workspace: Any) -> Any: ...


class StreamHandler:
    """One per socket; owns the socket's loops and its search tasks (issue 14 §6)."""

    def __init__(
        self, session: Session, socket: Socket, *, guard: PathGuard, search: SearchService
    ) -> None:
        self.session = session
        self.socket = socket
        self.guard = guard
        self.search_service = search
        # This socket's searches, keyed by query_id; they end with the socket.
        self.tasks = TaskOwner(f"stream {session.id}", log)
        self.searches: dict[str, asyncio.Task] = {}
        self.cancelled: OrderedDict[str, None] = OrderedDict()

    async def serve(self, outbox: Outbox) -> None:
        """Run the socket until it closes, stops draining, or one of its loops fails.

        The sender, the receiver and the wait for an abandoned outbox race (runtime.tasks): the
        first to finish ends the others. A loop that fails is logged here, once, with its
        traceback, and the connection ends; cancellation (the socket dropped) passes through.
        Searches end with the socket; a cancel the socket asked for belongs to the session.
        """
        try:
            async with self.tasks:
                await race(self._send(outbox), self._receive(), outbox.abandoned.wait())
        except Exception:
            log.exception("session %s: the socket's data plane failed; closing it", self.session.id)

    async def _send(self, outbox: Outbox) -> None:
        """Send the outbox in order until CLOSE. Every frame already queued is taken at once
        and, when the socket can, written together: a flooding agent queues many frames
        between two turns of this loop, and a write per frame cost more than the frame."""
        send_many = getattr(self.socket, "send_many", None)
        sent_metric = self.session.metrics.frames_sent
        while True:
            batch, closing = await outbox.take(SEND_BATCH_BYTES)
            texts = [item if isinstance(item, str) else item.text for item in batch]
            if send_many is not None:
                await send_many(texts)
            else:
                for text in texts:
                    await self.socket.send(text)
            sent_metric.inc(len(batch))
            outbox.sent(batch)
            Session.mark_sent(batch)
            if closing:
                return

    async def _receive(self) -> None:
        while True:
            data = await self.socket.receive()
            try:
                frame = parse_frame(data, max_size=self.session.limits.max_frame_size)
            except FrameError as exc:
                await self._reply_error(exc)
                continue
            await self.dispatch(frame)

    async def _reply_error(self, exc: FrameError) -> None:
        frame = session_error_frame(exc, self.session.id)
        await self.session.emit(
            "session.error", frame.payload, parent_id=frame.parent_id, in_turn=False
        )

    async def _error(self, code: str, message: str, ref: str | None) -> None:
        payload = {"code": code, "message": message}
        if ref:
            payload["ref_message_id"] = ref
        await self.session.emit("session.error", payload, parent_id=ref, in_turn=False)

    async def dispatch(self, frame: Frame) -> None:
        if frame.session_id is not None and frame.session_id != self.session.id:
            await self._error("SESSION_MISMATCH", "frame is for another session", frame.message_id)
            return
        if frame.type.startswith("control.") and not self.session.first_control(frame.message_id):
            log.debug("session %s: repeated control %s dropped", self.session.id, frame.message_id)
            self.session.metrics.frames_dropped.labels("duplicate_control").inc()
            return  # session rule 6: it took effect the first time
        payload = frame.payload
        if isinstance(payload, PromptRequest):
            await self._prompt(frame, payload)
        elif isinstance(payload, PromptCancel):
            await self._cancel(frame, payload)
        elif isinstance(payload, InteractionResponse):
            if self.session.agent is not None:
                await self.session.agent.respond(payload)
        elif isinstance(payload, ContextCompact) and "compact" in self.session.commands:
            await self._compact(frame, payload)
        elif isinstance(payload, ModeSet | ModelSet | ConfigSet):
            # The session owns it, like a cancel: a socket that drops must not stop it.
            self.session.tasks.spawn(self._mode(frame, payload), name="mode")
        elif isinstance(payload, ToolInvokeRequest):
            await self._tool(frame, payload)
        elif isinstance(payload, FileSearch):
            self._search(frame, payload)
        elif isinstance(payload, FileSearchCancel):
            self._cancel_search(payload.query_id)
        elif frame.known and frame.type.startswith("control."):
            # control.context.compact for an agent that published no `compact` command.
            await self._error(
                "UNSUPPORTED_CONTROL",
                f"{frame.type} is not supported by this agent",
                frame.message_id,
            )
        # Anything else (unknown types, agent-side events) is ignored, RAWP §1.3.

    async def _prompt(self, frame: Frame, request: PromptRequest) -> None:
        session = self.session
        assert session.agent is not None
        # Refused before the prompt is built: building saves its file attachments into the
        # workspace, and a refused prompt's files would be left there unused. Nothing runs
        # between this check and the queueing below (building is synchronous).
        if session.turns.full():
            await self._queue_full(frame)
            return
        try:
            prompt = build_prompt(
                request,
                frame.message_id,
                agent=session.agent,
                guard=self.guard,
                workspace=session.workspace,
            )
        except PromptRefused as exc:
            await self._error(exc.code, exc.message, frame.message_id)
            return
        if not session.queue_prompt(prompt):
            await self._queue_full(frame)

    async def _queue_full(self, frame: Frame) -> None:
        await self._error(  # dps-profile §6
            "TURN_QUEUE_FULL", "too many prompts are waiting; try again", frame.message_id
        )

    async def _compact(self, frame: Frame, request: ContextCompact) -> None:
        """The agent's `compact` command as a turn of its own (issue 30 §1); its
        `session.context.compacted` is the agent's to send."""
        await self._prompt(frame, request.as_prompt())

    async def _mode(self, frame: Frame, request: ModeSet | ModelSet | ConfigSet) -> None:
        agent = self.session.agent
        assert agent is not None
        try:
            if isinstance(request, ModeSet):
                await agent.set_mode(request.mode)
            elif isinstance(request, ModelSet):
                await agent.set_model(request.model)
            else:
                await agent.set_config(request.config_id, request.value)
        except ModeRefused as exc:
            await self._error(exc.code, exc.message, frame.message_id)

    async def _cancel(self, frame: Frame, cancel: PromptCancel) -> None:
        session = self.session
        if session.turn_id is None or (cancel.turn_id and cancel.turn_id != session.turn_id):
            await self._error("NO_SUCH_TURN", "no running turn with that turn_id", frame.message_id)
            return
        assert session.agent is not None
        # Ending the agent can take the whole grace period; the socket loop must not wait,
        # and a socket that drops meanwhile must not stop it: the session owns the cancel.
        session.tasks.spawn(session.agent.cancel(), name="cancel")

    async def _tool(self, frame: Frame, request: ToolInvokeRequest) -> None:
        session = self.session
        published = {tool.get("name"): tool for tool in session.catalog}
        tool = published.get(request.tool_name)
        if tool is None or not tool.get("direct", False) or session.agent is None:
            result: dict[str, Any] = {
                "invocation_id": request.invocation_id,
                "tool_name": request.tool_name,
                "status": "error",
                "output_type": "empty",
                "error": {
                    "code": "TOOL_NOT_PUBLISHED",
                    "message": f"{request.tool_name!r} is not published as a direct tool",
                },
            }
        else:
            result = await session.agent.invoke_tool(request)
        await session.emit("tool.invoke.result", result, parent_id=frame.message_id, in_turn=False)

    def _search(self, frame: Frame, request: FileSearch) -> None:
        query_id = request.query_id
        if query_id in self.cancelled:
            return
        previous = self.searches.pop(query_id, None)
        if previous is not None:
            previous.cancel()
        request = request.model_copy(update={"max_results": min(request.max_results, MAX_RESULTS)})
        task = self.tasks.spawn(self._run_search(frame.message_id, request), name="search")
        self.searches[query_id] = task
        task.add_done_callback(lambda done: self._forget(query_id, done))

    def _forget(self, query_id: str, task: asyncio.Task) -> None:
        # Only this task's entry: a newer search may already reuse the query_id.
        if self.searches.get(query_id) is task:
            del self.searches[query_id]

    async def _run_search(self, message_id: str, request: FileSearch) -> None:
        try:
            result = await self.search_service.search(request, self.session.workspace)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("file search failed")
            await self._error("FILE_SEARCH_FAILED", type(exc).__name__, message_id)
            return
        if request.query_id in self.cancelled:  # a result that lost the race stays here
            return
        await self.session.emit(
            "session.file.candidates", result, parent_id=message_id, in_turn=False
        )

    def _cancel_search(self, query_id: str) -> None:
        self.cancelled[query_id] = None
        while len(self.cancelled) > CANCELLED_MEMORY:
            self.cancelled.popitem(last=False)
        task = self.searches.pop(query_id, None)
        if task is not None:
            task.cancel()
