"""`GET /metrics` on the local client: Prometheus text exposition of `client.metrics`.

Not behind the master's token (a scraper holds none); who may read it is `runtime.scrape_access`.
"""

from __future__ import annotations

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from quart import Blueprint, Response, request

from client.api.common import services
from rawp.errors import Forbidden
from runtime.scrape_access import REFUSAL, may_scrape
from runtime.settings import plain

metrics = Blueprint("metrics", __name__)


@metrics.get("/metrics")
async def get_metrics():
    svc = services()
    if not may_scrape(request.remote_addr, request.headers, plain(svc.settings.metrics_token)):
        raise Forbidden(REFUSAL, "METRICS_FORBIDDEN")
    registry = svc.sessions.metrics.registry
    return Response(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)
