"""The local client's Prometheus metrics (docs/operations-client.md, "Metrics").

One `ClientMetrics` per app, on its own `CollectorRegistry` (tests run several clients in one
process). Counters move where the work happens (the session's turn loop, the stream's sender,
attach); sessions and sockets by state are read from the session table when scraped. Labels
hold agent kinds, outcomes and states only — never a prompt, a ticket or a session id.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from rawp.session_state import SessionState

# DPS `stop_reason` values (rawp.events.StopReason); anything else is counted as "other".
OUTCOMES = ("end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled", "error")
TURN_BUCKETS = (0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800)
REPLAY_BUCKETS = (0, 1, 5, 10, 50, 100, 500, 1000, 5000, 20000)


class _SessionTable(Collector):
    def __init__(self, metrics: ClientMetrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterable[Any]:
        sessions = GaugeMetricFamily(
            "rawp_client_sessions", "Agent sessions on this machine, by state", labels=["state"]
        )
        sockets = GaugeMetricFamily(
            "rawp_client_sockets", "Master WebSockets attached to a session", labels=["peer"]
        )
        table = list(self._metrics.sessions())
        for state in SessionState:
            sessions.add_metric([state.value], sum(1 for s in table if s.state == state))
        sockets.add_metric(["master"], sum(1 for s in table if s.outbox is not None))
        yield sessions
        yield sockets


class ClientMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.sessions: Callable[[], Iterable[Any]] = tuple  # set by the session table
        r = self.registry
        self.turns = Counter(
            "rawp_client_agent_turns_total",
            "Agent turns finished, by agent kind and outcome (the turn's stop_reason)",
            ["kind", "outcome"],
            registry=r,
        )
        self.turn_seconds = Histogram(
            "rawp_client_agent_turn_seconds",
            "How long agent turns took, by agent kind",
            ["kind"],
            buckets=TURN_BUCKETS,
            registry=r,
        )
        self.frames_sent = Counter(
            "rawp_client_frames_sent_total",
            "Frames written to the master's WebSocket",
            registry=r,
        )
        self.frames_dropped = Counter(
            "rawp_client_frames_dropped_total",
            "Frames not delivered, by reason (buffer_overflow: lost from the replay buffer "
            "while no socket read them; duplicate_control: a repeated control message_id)",
            ["reason"],
            registry=r,
        )
        self.replay_frames = Histogram(
            "rawp_client_replay_frames",
            "Frames replayed to the master on a reattach or a frames_after request",
            buckets=REPLAY_BUCKETS,
            registry=r,
        )
        for reason in ("buffer_overflow", "duplicate_control"):
            self.frames_dropped.labels(reason)
        r.register(_SessionTable(self))

    def turn(self, kind: str, outcome: str, seconds: float) -> None:
        outcome = outcome if outcome in OUTCOMES else "other"
        self.turns.labels(kind or "unknown", outcome).inc()
        self.turn_seconds.labels(kind or "unknown").observe(max(0.0, seconds))
