"""The master's Prometheus metrics (docs/operations-master.md, "Metrics").

One `MasterMetrics` per app, on its own `CollectorRegistry` (tests run several masters in one
process). Counters move where the work happens — the data plane, the edge sockets, the usage
book; gauges of sockets and sessions are read from the session table when scraped, so they
cannot drift from it. Labels hold kinds, states and reasons only: never a token, a ticket, a
prompt, a user or a session id (one series per session would grow without bound).

The relay's own counts — frames relayed each way and the relay latency — are plain numbers
kept by `RelayTally` and exported when scraped: a prometheus_client child's `inc` takes a
lock, and the relay took three a frame (issue 35: ~10 % of the master's samples in py-spy with
10,000 sessions streaming). Only the event loop writes them.

Relay latency is the time from a client frame's arrival in the data plane (`FRAME_ARRIVED`,
set by `DataPlane` around its synchronous forward of the frame) to its write on each edge
socket. It is
measured for frames the in-process relay publishes; replayed frames are not timed, nor, with
several replicas, frames that reach edge sockets through Redis (docs/scale-out.md).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString


class FrameArrival:
    """`at`: time.perf_counter() when the client frame now being published reached the master,
    else None. The data plane sets it only around its synchronous forward of a frame (no await
    in between), so one holder serves the event loop. It was a context variable: setting and
    resetting one per frame replaced the HAMT of each client link's context every frame, and at
    10,000 sessions those ~20,000 young objects were alive for every young collection to walk
    (issue 35, a gc callback in the master)."""

    __slots__ = ("at",)

    def __init__(self) -> None:
        self.at: float | None = None


FRAME_ARRIVED = FrameArrival()
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5)
REPLAY_BUCKETS = (0, 1, 5, 10, 50, 100, 500, 1000, 5000, 20000)
SESSION_STATES = ("RUNNING", "DETACHED")


class _LiveTable(Collector):
    """Sockets and sessions by state, read from the session table at scrape time."""

    def __init__(self, metrics: MasterMetrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterable[Any]:
        sessions = GaugeMetricFamily(
            "rawp_master_sessions",
            "Sessions whose client link this master holds, by link state",
            labels=["state"],
        )
        sockets = GaugeMetricFamily(
            "rawp_master_sockets", "Open WebSockets, by peer (edge or client)", labels=["peer"]
        )
        live = list(self._metrics.live_sessions())
        connected = sum(1 for session in live if session.link is not None and _up(session.link))
        sessions.add_metric(["RUNNING"], connected)
        sessions.add_metric(["DETACHED"], len(live) - connected)
        sockets.add_metric(["client"], connected)
        sockets.add_metric(["edge"], self._metrics.edge_sockets)
        yield sessions
        yield sockets


def _up(link: Any) -> bool:
    connected = link.connected
    return bool(connected() if callable(connected) else connected)


class RelayTally(Collector):
    """Frames relayed, by direction, and the relay latency's histogram, as plain numbers
    (module docstring); scraped as `rawp_master_frames_relayed_total{direction}` and
    `rawp_master_relay_latency_seconds`, exactly as prometheus_client's own would be."""

    def __init__(self, buckets: Sequence[float] = LATENCY_BUCKETS) -> None:
        self.bounds = tuple(buckets)
        self.to_edge = 0
        self.to_client = 0
        self.latency_counts = [0] * (len(self.bounds) + 1)  # the last: past every bound
        self.latency_sum = 0.0

    def observe(self, seconds: float) -> None:
        # Histogram.observe counts an amount in the first bucket whose bound is >= it.
        self.latency_counts[bisect_left(self.bounds, seconds)] += 1
        self.latency_sum += seconds

    def observe_many(self, amounts: Sequence[float]) -> None:
        counts, bounds = self.latency_counts, self.bounds
        for amount in amounts:
            counts[bisect_left(bounds, amount)] += 1
        self.latency_sum += sum(amounts)

    def collect(self) -> Iterable[Any]:
        relayed = CounterMetricFamily(
            "rawp_master_frames_relayed",
            "Frames written to a peer: to_edge once per edge socket, to_client once per frame",
            labels=["direction"],
        )
        relayed.add_metric(["to_edge"], self.to_edge)
        relayed.add_metric(["to_client"], self.to_client)
        yield relayed
        cumulative, buckets = 0, []
        for bound, count in zip((*self.bounds, float("inf")), self.latency_counts, strict=True):
            cumulative += count
            buckets.append((floatToGoString(bound), cumulative))
        yield HistogramMetricFamily(
            "rawp_master_relay_latency_seconds",
            "Time from a client frame's arrival to its write on each edge socket",
            buckets=buckets,
            sum_value=self.latency_sum,
        )


class MasterMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.edge_sockets = 0  # open edge WebSockets (ws.py counts them in and out)
        self.live_sessions: Callable[[], Iterable[Any]] = tuple  # set once services exist
        r = self.registry
        self.frames_dropped = Counter(
            "rawp_master_frames_dropped_total",
            "Frames not relayed, by reason",
            ["reason"],
            registry=r,
        )
        self.replay_frames = Histogram(
            "rawp_master_replay_frames",
            "Frames replayed to an edge reconnecting with last_message_id",
            buckets=REPLAY_BUCKETS,
            registry=r,
        )
        self.edge_connections = Counter(
            "rawp_master_edge_connections_total",
            "Edge WebSockets accepted, by whether they resumed from a cursor",
            ["resumed"],
            registry=r,
        )
        self.tokens = Counter(
            "rawp_master_tokens_total",
            "Tokens reported by session.usage, by kind (input, output)",
            ["kind"],
            registry=r,
        )
        self.cost = Counter(
            "rawp_master_cost_usd_total", "Cost reported by session.usage, US dollars", registry=r
        )
        self.tool_invocations = Counter(
            "rawp_master_tool_invocations_total",
            "Tool invocations reported by session.usage",
            registry=r,
        )
        self.usage_unrecorded = Counter(
            "rawp_master_usage_unrecorded_total",
            "session.usage frames forwarded but not recorded: the database refused every try",
            registry=r,
        )
        self.relay = RelayTally()  # the hot path's counts (module docstring)
        r.register(self.relay)
        for kind in ("input", "output"):
            self.tokens.labels(kind)
        r.register(_LiveTable(self))

    def usage(self, usage: Any) -> None:
        """One recorded `session.usage` (rawp.events.Usage), counted once (the book refuses a
        repeat by message_id, so a replayed usage frame is not counted twice)."""
        self.tokens.labels("input").inc(usage.input_tokens or 0)
        self.tokens.labels("output").inc(usage.output_tokens or 0)
        self.cost.inc(usage.cost_usd or 0.0)
        self.tool_invocations.inc(usage.tool_invocations or 0)
