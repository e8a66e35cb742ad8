"""The master's duties on each relayed frame (RAWP §9.4.1–§9.4.3), both directions.

Client → edges (`from_client`), the hot path: the envelope is read once with orjson for
routing; the original text is what every edge receives, never a re-serialization (E-WS-03).

* `session.usage` is recorded before it is forwarded (E-WS-07, A-24: recorded *and*
  forwarded), so metrics already include a usage frame an edge has received. A write the
  database refuses is retried, then logged and counted (master.edge.usage.usage), never dropped
  silently; the frame is forwarded either way.
* `agent.error` with `severity: fatal` becomes the node's `health.last_error` (§9.2.2).
* `session.capabilities`, `tool.catalog.publish` and `agent.commands.publish` are kept for
  edges that attach later (relay rule 4).
* Everything else, `session.file.candidates` included, is forwarded untouched (E-WS-08).

Most client frames need no wait at all; `from_client_now` does the same duties synchronously,
for the link's socket reader to call in the turn of the event loop that read the frame
(client_link rule 9), and answers `LATER` for a frame that does need one.

Edge → client (`from_edge`):

* the frame is read and checked like any DPS frame (dps-profile §1); a bad frame gets
  `session.error` on that edge socket only, which stays open;
* an edge may send `control.*` frames and the two-way `tool.invoke.request`/`session.error`;
  an agent-side event from an edge is refused with `EVENT_NOT_ALLOWED`; unknown types pass;
* `control.*` frames are de-duplicated by `message_id` within the session (E-WS-11, A-25): a
  repeat is dropped silently, as its first copy already took effect;
* `control.prompt.request` goes through the security policy (E-WS-09), then the budgets
  (master.edge.usage.budgets): one used up refuses it with `BUDGET_EXCEEDED`, one at 80 % adds a
  `BUDGET_WARNING` notice once per period; so does `control.context.compact`, checked as the
  `/compact` prompt the client runs it as (`ContextCompact.as_prompt`);
* the original text goes to the client link (E-WS-06); when none takes it the edge gets
  `session.error` `CLIENT_UNAVAILABLE`.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import orjson

from master.edge.links.policy import REJECTED, SecurityPolicy
from master.edge.live import RelayedSession
from master.edge.relay.edge_socket import EdgeSocket
from master.edge.relay.relay import GREETING_TYPES, Relay
from master.edge.usage.budgets import BudgetGuard
from master.edge.usage.usage import UsageBook
from master.metrics import FRAME_ARRIVED, MasterMetrics
from rawp.clock import Clock
from rawp.errors import FrameError
from rawp.events import EVENTS, ContextCompact, Direction, PromptRequest
from rawp.frames import dump_frame, make_frame, parse_frame, session_error_frame

log = logging.getLogger("rawp.master.edge.dataplane")

FROM_EDGE = (Direction.EDGE_TO_AGENT, Direction.BOTH)
UNAVAILABLE = "the local client is not reachable right now; try again shortly"
ACTIVITY_WRITE_INTERVAL = 5.0  # seconds between `last_activity_at` writes per session
LATER = object()  # `from_client_now`: this frame needs a wait; give it to `from_client`


class NodeErrors:
    """The most recent fatal error seen per node (§9.2.2 `health.last_error`)."""

    def __init__(self) -> None:
        self.last: dict[str, str] = {}

    def note(self, node_id: str, message: str) -> None:
        self.last[node_id] = message[:500]


class DataPlane:
    def __init__(
        self,
        relay: Relay,
        usage: UsageBook,
        policy: SecurityPolicy,
        errors: NodeErrors,
        clock: Clock,
        metrics: MasterMetrics | None = None,
        budgets: BudgetGuard | None = None,
    ) -> None:
        self.metrics = metrics or MasterMetrics()
        self.relay = relay
        self.budgets = budgets
        self.usage = usage
        self.policy = policy
        self.errors = errors
        self._clock = clock
        # `last_activity_at` and usage records, written in rounds by one writer (issue 35).
        self.book = usage.book

    async def start(self) -> None:
        await self.book.start()

    async def close(self) -> None:
        await self.book.close()

    # --- client → edges ------------------------------------------------------------------------

    async def from_client(self, live: RelayedSession, text: str, *, repeat_greeting: bool) -> Any:
        """Forward one client frame; returns its (type, message_id), or None if unreadable.

        `repeat_greeting` marks a greeting frame of a reattached client socket: it refreshes
        what later edges are greeted with but is not sent again to edges that have it.
        """
        arrived = time.perf_counter()  # relay latency (master.metrics)
        read = self._read(live, text)
        if read is None:
            return None
        kind, message_id, envelope = read
        if kind == "session.usage":  # retried, then logged and counted: never dropped silently
            await self.usage.record_or_count(
                message_id=message_id,
                session_id=live.id,
                node_id=live.node_id,
                user_id=live.user_id,
                payload=envelope.get("payload"),
            )
        await self.relay.room()  # a shared relay's write queue is bounded: the pump waits
        return self._forward(live, text, kind, message_id, envelope, repeat_greeting, arrived)

    def from_client_now(self, live: RelayedSession, text: str, *, repeat_greeting: bool) -> Any:
        """`from_client` without a wait, for the link's reader (client_link rule 9): the same
        duties and answer, or `LATER` when the frame needs one — a `session.usage` (its
        database write) or a shared relay with no room — and must go through `from_client`."""
        arrived = time.perf_counter()
        read = self._read(live, text)
        if read is None:
            return None
        kind, message_id, envelope = read
        if kind == "session.usage" or not self.relay.has_room():
            return LATER
        return self._forward(live, text, kind, message_id, envelope, repeat_greeting, arrived)

    def _read(self, live: RelayedSession, text: str) -> tuple[str, str, dict] | None:
        try:
            envelope = orjson.loads(text)
            kind, message_id = envelope["type"], envelope["message_id"]
            if not isinstance(kind, str) or not isinstance(message_id, str):
                raise TypeError
        except (orjson.JSONDecodeError, KeyError, TypeError):
            log.warning("session %s: the client sent an unreadable frame; dropped", live.id)
            self.metrics.frames_dropped.labels("unreadable").inc()
            return None
        return kind, message_id, envelope

    def _forward(
        self,
        live: RelayedSession,
        text: str,
        kind: str,
        message_id: str,
        envelope: dict,
        repeat_greeting: bool,
        arrived: float,
    ) -> tuple[str, str]:
        if kind == "agent.error":
            payload = envelope.get("payload")
            if isinstance(payload, dict) and payload.get("severity") == "fatal":
                self.errors.note(live.node_id, str(payload.get("message", "")))
        if kind in GREETING_TYPES:
            self.relay.remember_greeting(live.id, kind, text)
            if repeat_greeting:
                return kind, message_id
        # The publish is synchronous through every edge's offer: the holder is this frame's
        # arrival for each of them (master.metrics.FrameArrival).
        FRAME_ARRIVED.at = arrived
        try:
            self.relay.publish(live.id, message_id, text, kind)
        finally:
            FRAME_ARRIVED.at = None
        self._active(live)
        return kind, message_id

    # --- edge → client -------------------------------------------------------------------------

    async def from_edge(self, live: RelayedSession, edge: EdgeSocket, data: str | bytes) -> None:
        try:
            frame = parse_frame(data, max_size=live.limits.max_frame_size)
        except FrameError as exc:
            self.metrics.frames_dropped.labels("bad_frame").inc()
            edge.offer(dump_frame(session_error_frame(exc, live.id)))
            return
        ref = frame.message_id
        if frame.session_id is not None and frame.session_id != live.id:
            self._refuse(edge, live, "SESSION_MISMATCH", "the frame names another session", ref)
            return
        spec = EVENTS.get(frame.type)
        if spec is not None and spec.direction not in FROM_EDGE:
            self._refuse(
                edge, live, "EVENT_NOT_ALLOWED", f"an edge does not send {frame.type}", ref
            )
            return
        control = frame.type.startswith("control.")
        try:
            fresh = not control or await self.relay.claim_control(live.id, ref)
        except Exception:  # the shared relay's Redis is away: say so, keep the socket
            log.warning("session %s: could not claim control frame %s", live.id, ref)
            self._refuse(edge, live, "CLIENT_UNAVAILABLE", UNAVAILABLE, ref)
            return
        if not fresh:
            log.debug("session %s: duplicate control frame %s dropped", live.id, ref)
            self.metrics.frames_dropped.labels("duplicate_control").inc()
            return
        checked = frame.payload
        if isinstance(checked, ContextCompact):  # it runs as the agent's `compact` command
            checked = checked.as_prompt()
        if isinstance(checked, PromptRequest):
            verdict = self.policy.check(checked)
            if not verdict.allowed:
                self._refuse(edge, live, REJECTED, verdict.reason, ref)
                return
            if self.budgets is not None and self.budgets.enabled:
                spending = await self.budgets.check(live)
                if spending.refusal is not None:
                    # Not taken: the same frame may be sent again once the budget resets.
                    await self._release(live, ref)
                    refused = spending.refusal.code.lower()  # budget_exceeded, …_unavailable
                    self.metrics.frames_dropped.labels(refused).inc()
                    self._notify(edge, live, spending.refusal.payload(), ref)
                    return
                for warning in spending.warnings:
                    self._notify(edge, live, warning.payload(), None)
        text = data if isinstance(data, str) else bytes(data).decode()
        if not await self.relay.to_client(live.id, text):
            if control:
                await self._release(live, ref)
            self._refuse(edge, live, "CLIENT_UNAVAILABLE", UNAVAILABLE, ref)
            return
        self.metrics.relay.to_client += 1
        self._active(live)

    async def _release(self, live: RelayedSession, ref: str) -> None:
        """A claimed control frame that did not go through may come again with the same id."""
        try:
            await self.relay.release_control(live.id, ref)
        except Exception:  # Redis away: at worst the id stays claimed an hour
            log.warning("session %s: could not release control frame %s", live.id, ref)

    def _refuse(
        self, edge: EdgeSocket, live: RelayedSession, code: str, message: str, ref: str
    ) -> None:
        self.metrics.frames_dropped.labels(code.lower()).inc()  # session_mismatch, …
        self._notify(edge, live, {"code": code, "message": message}, ref)

    def _notify(
        self, edge: EdgeSocket, live: RelayedSession, payload: dict[str, Any], ref: str | None
    ) -> None:
        """A `session.error` for this edge socket only; `ref` None: a notice about no frame."""
        if ref is not None:
            payload = {**payload, "ref_message_id": ref}
        frame = make_frame(
            "session.error", payload, session_id=live.id, parent_id=ref, clock=self._clock
        )
        edge.offer(dump_frame(frame))

    def _active(self, live: RelayedSession) -> None:
        now = self._clock.monotonic()
        live.last_activity = now
        if now - live.activity_written >= ACTIVITY_WRITE_INTERVAL:
            live.activity_written = now
            # A mark in memory: the bookkeeper writes every session's in one round, so the
            # pump never waits on the database and 10,000 sessions cost one transaction.
            self.book.touch(live.id)
