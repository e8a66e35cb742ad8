"""The gateway's Prometheus metrics and the small HTTP server that serves them
(docs/operations-gateway.md, "Metrics").

Platform calls are counted at the one place every Discord REST call and Slack Web API call
passes: the aiohttp session of the platform library, through an `aiohttp.TraceConfig`
(`platform_trace`; discord.py takes one as `http_trace`, slack_sdk's client a session made
with it). Each attempt is one call, so a call refused with 429 and then retried counts twice:
once with status 429 and once with its final status. The adapter names the method of a URL
(`label_of`): a route template or a Web API method, never an id, a token or any text.

The wait of a 429 is what the platform asked for (`Retry-After`, else Discord's
`X-RateLimit-Reset-After`): discord.py sleeps exactly that, slack_sdk that plus up to a second
of jitter. A rate limit delays a call; it never drops it (issue 16). Each 429 is also handed
to the `rate_limit_listeners` (platform, label, response headers): the shared platform budget
blocks the route for every replica there (gateway.replicas.budgeted_platform rule 4).

Operations are counted one level up as well: `PlatformOpMetrics` wraps the platform a
conversation service posts through (gateway.platform_middleware), so each operation the
renderer asks for (`send_message`, `set_status`, …) is counted by outcome and timed, its budget
wait and any retried 429 included.

`MetricsServer` serves `GET /metrics` (runtime.scrape_access decides who may read it) and
`GET /health` (200 while the gateway runs) on `RAWP_GATEWAY_METRICS_ADDRESS`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from types import SimpleNamespace
from typing import Any

import aiohttp
from aiohttp import web
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from gateway.platform import ChatPlatform
from gateway.platform_middleware import PlatformCall, PlatformMiddleware, Proceed
from gateway.settings import parse_address  # noqa: F401  (re-exported: tests, launch)
from runtime.scrape_access import REFUSAL, may_scrape

log = logging.getLogger(__name__)

CALL_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)


class GatewayMetrics:
    def __init__(self) -> None:
        self.registry = r = CollectorRegistry()
        self.platform_calls = Counter(
            "rawp_gateway_platform_calls_total",
            "HTTP calls to a chat platform's API, by platform, method and status",
            ["platform", "method", "status"],
            registry=r,
        )
        self.rate_limited = Counter(
            "rawp_gateway_platform_rate_limited_total",
            "Platform calls answered 429 (each is waited out and retried)",
            ["platform", "method"],
            registry=r,
        )
        self.rate_limit_wait = Counter(
            "rawp_gateway_platform_rate_limit_wait_seconds_total",
            "Seconds the platform asked the gateway to wait after a 429",
            ["platform", "method"],
            registry=r,
        )
        self.call_seconds = Histogram(
            "rawp_gateway_platform_call_seconds",
            "How long platform calls took, by platform",
            ["platform"],
            buckets=CALL_BUCKETS,
            registry=r,
        )
        self.platform_ops = Counter(
            "rawp_gateway_platform_ops_total",
            "Operations the gateway asked of a chat platform, by platform, operation and outcome",
            ["platform", "op", "outcome"],
            registry=r,
        )
        self.op_seconds = Histogram(
            "rawp_gateway_platform_op_seconds",
            "How long platform operations took, budget waits and retried 429s included",
            ["platform", "op"],
            buckets=CALL_BUCKETS,
            registry=r,
        )
        # awaited on each 429 with (platform, label, headers): gateway.replicas.budgeted_platform
        self.rate_limit_listeners: list[Callable[[str, str, Any], Awaitable[None]]] = []
        # (platform, the live sessions of its conversation service), read when scraped
        self.sources: list[tuple[str, Callable[[], Iterable[Any]]]] = []
        r.register(_LiveSessions(self))

    def watch(self, platform: str, live_sessions: Callable[[], Iterable[Any]]) -> None:
        """Count `live_sessions()` at every scrape.

        They are gateway.sessions.live.ConnectedSession objects."""
        self.sources.append((platform, live_sessions))

    def wrap(self, platform: ChatPlatform) -> ChatPlatform:
        """`platform` with each of its operations counted and timed (`PlatformOpMetrics`)."""
        return PlatformOpMetrics(platform, self)

    def platform_trace(self, platform: str, label_of: Callable[[Any], str]) -> aiohttp.TraceConfig:
        """An aiohttp TraceConfig counting every request of a platform library's session."""
        trace = aiohttp.TraceConfig()

        async def start(_session: Any, context: SimpleNamespace, _params: Any) -> None:
            context.started = time.perf_counter()

        async def end(_session: Any, context: SimpleNamespace, params: Any) -> None:
            method = label_of(params)
            status = params.response.status
            self._done(platform, method, str(status), context)
            if status == 429:
                self.rate_limited.labels(platform, method).inc()
                self.rate_limit_wait.labels(platform, method).inc(_asked_wait(params.response))
                for listener in self.rate_limit_listeners:
                    await listener(platform, method, params.response.headers)

        async def failed(_session: Any, context: SimpleNamespace, params: Any) -> None:
            self._done(platform, label_of(params), "error", context)

        trace.on_request_start.append(start)
        trace.on_request_end.append(end)
        trace.on_request_exception.append(failed)
        return trace

    def _done(self, platform: str, method: str, status: str, context: SimpleNamespace) -> None:
        self.platform_calls.labels(platform, method, status).inc()
        started = getattr(context, "started", None)
        if started is not None:
            self.call_seconds.labels(platform).observe(time.perf_counter() - started)


class PlatformOpMetrics(PlatformMiddleware):
    """Each operation of the platform it wraps (gateway.platform_middleware), counted by its
    outcome (`ok`, `error`, `cancelled`) and timed: what the renderer asked and how long it
    waited for it, where the trace above counts the HTTP calls that made it."""

    def __init__(self, inner: ChatPlatform, metrics: GatewayMetrics) -> None:
        super().__init__(inner)
        self.metrics = metrics

    async def around(self, call: PlatformCall, proceed: Proceed) -> Any:
        started = time.perf_counter()
        outcome = "error"
        try:
            answer = await proceed(call)
            outcome = "ok"
            return answer
        except asyncio.CancelledError:
            outcome = "cancelled"
            raise
        finally:
            op = call.op.name
            self.metrics.platform_ops.labels(self.name, op, outcome).inc()
            self.metrics.op_seconds.labels(self.name, op).observe(time.perf_counter() - started)


class _LiveSessions(Collector):
    """Sessions this gateway renders and their sockets to the master, by platform."""

    def __init__(self, metrics: GatewayMetrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterable[Any]:
        sessions = GaugeMetricFamily(
            "rawp_gateway_sessions",
            "Live sessions this gateway renders, by platform and link state",
            labels=["platform", "state"],
        )
        sockets = GaugeMetricFamily(
            "rawp_gateway_sockets",
            "Open WebSockets to the master, by platform",
            labels=["platform"],
        )
        for platform, live_sessions in self._metrics.sources:
            links = [live.link for live in live_sessions()]
            up = sum(1 for link in links if link.connected)
            ended = sum(1 for link in links if link.ended)
            sessions.add_metric([platform, "connected"], up)
            sessions.add_metric([platform, "reconnecting"], len(links) - up - ended)
            sessions.add_metric([platform, "ended"], ended)
            sockets.add_metric([platform], up)
        yield sessions
        yield sockets


def _asked_wait(response: Any) -> float:
    for header in ("X-RateLimit-Reset-After", "Retry-After"):
        try:
            return max(0.0, float(response.headers.get(header, "")))
        except ValueError:
            continue
    return 0.0


class MetricsServer:
    """`GET /metrics` and `GET /health` on their own port (the gateway serves no other HTTP)."""

    def __init__(self, metrics: GatewayMetrics, token: str | None = None) -> None:
        self.metrics = metrics
        self.token = token
        self.url: str | None = None
        self._runner: web.AppRunner | None = None

    async def start(self, host: str, port: int) -> str:
        app = web.Application()
        app.router.add_get("/metrics", self._scrape)
        app.router.add_get("/health", self._health)
        self._runner = web.AppRunner(app, handle_signals=False, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, host, port).start()
        bound_host, bound_port = self._runner.addresses[0][:2]
        shown = f"[{bound_host}]" if ":" in bound_host else bound_host
        self.url = f"http://{shown}:{bound_port}"
        log.info("gateway metrics at %s/metrics", self.url)
        return self.url

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _scrape(self, request: web.Request) -> web.Response:
        if not may_scrape(request.remote, request.headers, self.token):
            body = {"error_code": "METRICS_FORBIDDEN", "message": REFUSAL}
            return web.json_response(body, status=403)
        body = generate_latest(self.metrics.registry)
        response = web.Response(body=body)
        response.headers["Content-Type"] = CONTENT_TYPE_LATEST
        return response

    async def _health(self, _request: web.Request) -> web.Response:
        return web.json_response({"status": "online"})
