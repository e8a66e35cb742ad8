"""One agent session on this machine: its agent, its turns and its outbound frames.

Rules:

1. Every frame the session emits goes through `emit`: split to the pinned `max_frame_size`
   (`client.sessions.chunking`), serialized once, kept in the `FrameBuffer` (RAWP §5.1,
   dps-profile §8) and, when a socket is attached, queued for it. The buffer decides what
   survives a detach.
2. `attach` queues, in this order and before any live frame: `session.capabilities`,
   `tool.catalog.publish`, then on a reattach `session.history` and the replay (dps-profile
   §7–§8). These greeting frames are per socket and are not buffered. The capabilities carry
   the fingerprints of the workspace's `.env` values, read at each attach
   (client.sessions.env_secrets).
3. Prompts run one turn at a time; a prompt during a turn waits in a bounded queue and past
   the bound gets `session.error` `TURN_QUEUE_FULL` (dps-profile §6).
4. The state column follows `rawp.session_state` only; TERMINATED is final and ends the agent
   process group (SIGTERM, SIGKILL after the grace period, C-SESS-06). The session owns its
   work (issue 14 §6): the turn worker and the cancels its sockets ask for run in its
   `TaskOwner`; `shutdown` ends the agent, then cancels and awaits them. A turn loop that
   fails (an agent kind's error is a failed turn, not this) ends the session.
5. A socket holding more than twice `max_buffer_size` bytes it has not yet taken is lost:
   the session detaches exactly as if it had dropped, so memory stays bounded (X-SEC-03).
6. A `control.*` frame acts once per `message_id` (E-WS-11 end to end): the master delivers
   edge frames at least once (a hand-off between replicas that times out is retried by the
   edge with the same id), so the session remembers the last `CONTROL_MEMORY` ids it acted on,
   across sockets, and drops a repeat silently.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from pathlib import Path
from typing import Any

from client.agents.base import Agent, Prompt
from client.metrics import ClientMetrics
from client.sessions.buffer import BufferedFrame, FrameBuffer
from client.sessions.chunking import SHORTENABLE, SPLITTABLE, shorten, split_text
from client.sessions.env_secrets import secret_fingerprints
from client.sessions.outbox import CLOSE, Outbox
from rawp.clock import Clock, new_id
from rawp.config import PinnedConfig
from rawp.events import EVENTS, Capabilities, Direction, Payload
from rawp.fingerprints import new_salt
from rawp.frames import dump_frame, encode_frame, frame_size, make_frame
from rawp.session_state import SessionEvent, SessionState, next_state
from runtime.logs import bind_session
from runtime.tasks import TaskOwner

log = logging.getLogger(__name__)

Piece = tuple[str, str, int]  # one frame to send: message_id, its text, its size in bytes
CONTROL_MEMORY = 4096  # control message_ids remembered per session (rule 6)


def capabilities_payload() -> Capabilities:
    """`session.capabilities` (DPS §12.2.1, §16.5): what this client emits and accepts."""
    return Capabilities(
        events=sorted(
            t for t, spec in EVENTS.items() if spec.direction != Direction.MASTER_TO_EDGE
        ),
        file_reference={
            "search": True,
            "max_results": 50,
            "scopes": ["workspace", "project", "global"],
        },
        input_types=["text", "slash_command"],
        tools_direct=False,
    )


class Session:
    def __init__(
        self,
        session_id: str,
        *,
        agent_name: str,
        workspace: Path,
        pinned: PinnedConfig,
        clock: Clock,
        turn_queue_max: int,
        agent_kind: str = "",
        metrics: ClientMetrics | None = None,
    ) -> None:
        self.id = session_id
        self.agent_name = agent_name
        self.agent_kind = agent_kind
        self.metrics = metrics or ClientMetrics()
        self.workspace = workspace
        self.pinned = pinned
        self.limits = pinned.limits
        self.clock = clock
        self.state = SessionState.INIT
        self.buffer = FrameBuffer(self.limits.max_buffer_size, self.limits.buffer_overflow_policy)
        self.agent: Agent | None = None
        self.catalog: list[dict[str, Any]] = []  # tool.catalog.publish, DPS §5
        self.commands: set[str] = set()  # the names of the last agent.commands.publish
        self.outbox: Outbox | None = None
        self.detach_deadline: float | None = None
        self.reattach_cursor: str | None = None  # last_message_id of a pending reattach
        self.reattaching = False
        self.turn_id: str | None = None
        self.turns: asyncio.Queue[Prompt] = asyncio.Queue(maxsize=turn_queue_max)
        # The session's own work: its turn worker and the cancels its sockets asked for.
        self.tasks = TaskOwner(f"session {session_id}", log)
        self.closed = asyncio.Event()
        self._salt = new_salt()  # of the `.env` fingerprints (client.sessions.env_secrets)
        self._controls: OrderedDict[str, None] = OrderedDict()  # rule 6

    def first_control(self, message_id: str) -> bool:
        """Rule 6: True the first time a control frame's `message_id` reaches the session."""
        if message_id in self._controls:
            return False
        self._controls[message_id] = None
        while len(self._controls) > CONTROL_MEMORY:
            self._controls.popitem(last=False)
        return True

    # --- outbound ----------------------------------------------------------------------------

    async def emit(
        self,
        type: str,
        payload: Payload | dict[str, Any],
        *,
        parent_id: str | None = None,
        in_turn: bool = True,
    ) -> None:
        """Send one event (rule 1). Raises FrameError if `payload` breaks its schema."""
        if isinstance(payload, Payload):
            payload = payload.model_dump(mode="json", exclude_none=True)
        if type == "tool.catalog.publish":
            # A re-published catalog replaces the one edge tool requests are checked against.
            self.catalog = list(payload.get("tools", []))
        elif type == "agent.commands.publish":
            # Whether `control.context.compact` can run: the agent's own `compact` command.
            self.commands = {str(c.get("name")) for c in payload.get("commands", [])}
        turn_id = self.turn_id if in_turn else None
        for piece in self._fit(type, payload, turn_id, parent_id):
            self._enqueue(piece)

    def _fit(
        self, type: str, payload: dict[str, Any], turn_id: str | None, parent_id: str | None
    ) -> list[Piece]:
        message_id, data = self._encode(type, payload, turn_id, parent_id)
        if len(data) <= self.limits.max_frame_size:  # the bytes on the wire (§4.1.5)
            return [(message_id, data.decode(), len(data))]
        return self._split(type, payload, turn_id, parent_id, len(data))

    def _encode(
        self, type: str, payload: dict[str, Any], turn_id: str | None, parent_id: str | None
    ) -> tuple[str, bytes]:
        """One frame with a fresh `message_id` and the time now: (its id, its bytes)."""
        message_id = new_id()
        data = encode_frame(
            type,
            payload,
            message_id=message_id,
            timestamp=self.clock.timestamp(),
            session_id=self.id,
            turn_id=turn_id,
            parent_id=parent_id,
        )
        return message_id, data

    def _split(
        self,
        type: str,
        payload: dict[str, Any],
        turn_id: str | None,
        parent_id: str | None,
        size: int,
    ) -> list[Piece]:
        """A frame over `max_frame_size`: split, shortened, cut or refused (rule 1)."""

        def build(p: dict[str, Any]) -> tuple[str, bytes]:
            return self._encode(type, p, turn_id, parent_id)

        limit = self.limits.max_frame_size
        if type == "session.file.candidates":
            return self._fewer_candidates(payload, build, limit, turn_id)
        field = SPLITTABLE.get(type) or SHORTENABLE.get(type)
        value = payload.get(field) if field else None
        if not isinstance(value, str):
            return self._too_large(type, size, turn_id)
        overhead = len(build({**payload, field: ""})[1])
        budget = limit - overhead
        if budget < 6:
            return self._too_large(type, size, turn_id)
        if type in SPLITTABLE:
            pieces = [build({**payload, field: part}) for part in split_text(value, budget)]
        else:
            pieces = [build({**payload, field: shorten(value, budget)})]
        return [(mid, data.decode(), len(data)) for mid, data in pieces]

    def _fewer_candidates(self, payload: dict[str, Any], build, limit: int, turn_id) -> list:
        """Candidates that do not fit one frame are cut from the end, reported `truncated`."""
        candidates = list(payload.get("candidates", []))
        while candidates:
            candidates.pop()
            message_id, data = build({**payload, "candidates": candidates, "truncated": True})
            if len(data) <= limit:
                return [(message_id, data.decode(), len(data))]
        return self._too_large("session.file.candidates", limit + 1, turn_id)

    def _too_large(self, type: str, size: int, turn_id: str | None) -> list[Piece]:
        frame = make_frame(
            "agent.error",
            {
                "code": "FRAME_TOO_LARGE",
                "message": f"a {type} of {size} bytes exceeds max_frame_size and was not sent",
                "severity": "warning",
            },
            session_id=self.id,
            turn_id=turn_id,
            clock=self.clock,
        )
        text = dump_frame(frame)
        return [(frame.message_id, text, frame_size(text))]

    def _enqueue(self, piece: Piece) -> None:
        if self.state == SessionState.TERMINATED:
            return
        outbox = self.outbox
        message_id, text, size = piece
        entry = self.buffer.add(message_id, text, size=size, live=outbox is not None)
        if outbox is None:
            return
        outbox.put(entry if entry is not None else text)
        # Twice the bound: a reattach's replay (at most one buffer) may still be in the queue.
        if outbox.pending_bytes > 2 * self.limits.max_buffer_size:
            # Rule 5: a socket that stopped draining is let go; from now on the buffer, with
            # its bound and policy, holds what the master has not read (X-SEC-03).
            log.warning("session %s: the socket stopped reading; detaching", self.id)
            outbox.end_session = self.detach(outbox)
            outbox.abandoned.set()

    def capabilities(self) -> dict[str, Any]:
        """This session's `session.capabilities` payload: the client's, the `.env`
        fingerprints, and the agent's modes, models and config options where it has them
        (client.agents.modes)."""
        caps = capabilities_payload().model_dump(mode="json", exclude_none=True)
        # Read each time, so an edited `.env` is known after the next attach (issue 15 §3).
        found = secret_fingerprints(self.workspace, self._salt)
        if found is not None:
            caps["secret_fingerprints"] = found.model_dump(mode="json")
        modes = self.agent.modes() if self.agent is not None else None
        if modes is not None:
            caps["modes"] = [m.model_dump(mode="json", exclude_none=True) for m in modes.available]
            caps["current_mode"] = modes.current
        models = self.agent.models() if self.agent is not None else None
        if models is not None:
            caps["models"] = [
                m.model_dump(mode="json", exclude_none=True) for m in models.available
            ]
            if models.current is not None:
                caps["current_model"] = models.current
        options = self.agent.config_options() if self.agent is not None else None
        if options:
            caps["config_options"] = [o.model_dump(mode="json", exclude_none=True) for o in options]
        return caps

    async def announce_capabilities(self) -> None:
        """A live `session.capabilities` after the agent's mode changed: buffered like any
        frame, and kept by the master as the one it greets a new edge socket with."""
        await self.emit("session.capabilities", self.capabilities(), in_turn=False)

    def greeting(self) -> list[tuple[str, str]]:
        """`session.capabilities` and `tool.catalog.publish`, each within `max_frame_size`.

        At the smallest frame sizes the optional `events` list is left out of the
        capabilities, and tool descriptions, then tools from the end, out of the catalog.
        """
        caps = self.capabilities()
        tools = [dict(tool) for tool in self.catalog]
        shrink_caps = [lambda: caps.pop("events", None)]
        shrink_tools = [lambda: [t.pop("description", None) for t in tools]] + [
            tools.pop for _ in range(len(tools))
        ]
        return [
            self._shrunk("session.capabilities", caps, shrink_caps),
            self._shrunk("tool.catalog.publish", {"tools": tools}, shrink_tools),
        ]

    def _shrunk(self, type: str, payload: dict[str, Any], steps: list) -> tuple[str, str]:
        """(message_id, text) of the frame, shrunk step by step until it fits."""
        frame = make_frame(type, payload, session_id=self.id, clock=self.clock)
        for step in steps:
            if frame_size(dump_frame(frame)) <= self.limits.max_frame_size:
                break
            step()
            frame = make_frame(type, payload, session_id=self.id, clock=self.clock)
        return frame.message_id, dump_frame(frame)

    # --- attach / detach ---------------------------------------------------------------------

    def attach(self) -> Outbox:
        """Bind a socket (rule 2); the caller drains the returned outbox into it."""
        if self.outbox is not None:  # a reattach took over a socket we still thought alive
            self.outbox.put(CLOSE)
            self.outbox = None
            self.state = next_state(self.state, SessionEvent.DETACH)
        reattach = self.state == SessionState.DETACHED or self.reattaching
        self.state = next_state(self.state, SessionEvent.ATTACH)
        self.detach_deadline = None
        outbox = Outbox()
        for message_id, text in self.greeting():
            # Not buffered, but an edge's cursor may point at it: its place is kept (buffer
            # rule 5), so a replay after it starts with the frames emitted after it.
            self.buffer.mark_between(message_id)
            outbox.put(text)
        if reattach:
            cursor = self.reattach_cursor
            replay = self.buffer.replay_after(cursor)
            dropped = self.buffer.take_dropped()
            self.metrics.replay_frames.observe(len(replay))
            self.metrics.frames_dropped.labels("buffer_overflow").inc(dropped)
            history = make_frame(
                "session.history",
                {
                    "since_message_id": cursor,
                    "replayed": len(replay),
                    "dropped": dropped,
                    "policy": self.limits.buffer_overflow_policy,
                },
                session_id=self.id,
                clock=self.clock,
            )
            self.buffer.mark_between(history.message_id)
            outbox.put(dump_frame(history))
            for entry in replay:
                outbox.put(entry)
        self.reattaching = False
        self.reattach_cursor = None
        self.outbox = outbox
        return outbox

    def detach(self, outbox: Outbox) -> bool:
        """The socket of `outbox` ended; True when the session must now terminate."""
        if self.outbox is not outbox or self.state != SessionState.RUNNING:
            return False
        self.outbox = None
        if self.limits.reattach_window == 0:  # C-CFG-09: no DETACHED state at all
            return True
        self.state = next_state(self.state, SessionEvent.DETACH)
        self.detach_deadline = self.clock.monotonic() + self.limits.reattach_window
        return False

    @staticmethod
    def mark_sent(items: list[Any]) -> None:
        """These items were written to the socket: their buffered frames are history now."""
        for item in items:
            if isinstance(item, BufferedFrame):
                item.sent = True

    # --- turns -------------------------------------------------------------------------------

    async def start_worker(self, agent: Agent, on_failure: Any) -> None:  # () -> Any
        """Run the turns; `on_failure` (the table ending this session) is called if the
        turn loop itself fails, so its sockets are closed rather than left waiting."""
        self.agent = agent
        agent.mode_changed = self.announce_capabilities
        self.catalog = [tool.model_dump(mode="json") for tool in agent.catalog()]
        await self.tasks.start()
        self.tasks.spawn(self._turns_or_end(on_failure), name="turns")

    async def _turns_or_end(self, on_failure: Any) -> None:
        bind_session(self.id)  # this task's log lines name the session (runtime.logs rule 1)
        try:
            await self._run_turns()
        except Exception:  # logged once, here, at the session's boundary (rule 4)
            log.exception("session %s: its turn loop failed; ending the session", self.id)
            on_failure()

    def queue_prompt(self, prompt: Prompt) -> bool:
        try:
            self.turns.put_nowait(prompt)
        except asyncio.QueueFull:
            return False
        return True

    async def _run_turns(self) -> None:
        assert self.agent is not None
        while True:
            prompt = await self.turns.get()
            self.turn_id = turn_id = new_id()
            started = self.clock.monotonic()
            await self.emit(
                "session.turn.start", {"turn_id": turn_id, "prompt_message_id": prompt.message_id}
            )
            try:
                stop_reason = await self.agent.prompt(prompt)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # an agent kind's bug must not end the session loop
                log.exception("agent %s failed a turn", self.agent_name)
                await self.emit(
                    "agent.error",
                    {"code": "AGENT_FAILED", "message": type(exc).__name__, "severity": "error"},
                )
                stop_reason = "error"
            took = self.clock.monotonic() - started
            self.metrics.turn(self.agent_kind, stop_reason, took)
            duration = int(took * 1000)
            await self.emit(
                "session.turn.end",
                {"turn_id": turn_id, "stop_reason": stop_reason, "duration_ms": max(0, duration)},
            )
            self.turn_id = None

    # --- the end -----------------------------------------------------------------------------

    def terminate(self) -> bool:
        """Rule 4, the instant part: TERMINATED now, socket told to close. False if already."""
        if self.state == SessionState.TERMINATED:
            return False
        self.state = next_state(self.state, SessionEvent.TERMINATE)
        if self.outbox is not None:
            self.outbox.put(CLOSE)
            self.outbox = None
        return True

    async def shutdown(self) -> None:
        """Rule 4, the slow part: end the agent's process group (C-SESS-06), drop buffers."""
        try:
            if self.agent is not None:
                await self.agent.close()
            # The turn worker and any cancel still running end here (a failure of theirs was
            # logged when it happened, under this session's name).
            await self.tasks.close()
        finally:
            self.buffer.clear()
            self.closed.set()
