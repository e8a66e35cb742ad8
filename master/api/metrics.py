"""`GET /metrics` on the master: Prometheus text exposition of `master.metrics`.

Not behind the user token (a scraper holds none); who may read it is `runtime.scrape_access`.
"""

from __future__ import annotations

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from quart import Blueprint, Response, request

from master.api.common import remote_address, services
from rawp.errors import Forbidden
from runtime.scrape_access import REFUSAL, may_scrape
from runtime.settings import plain

blueprint = Blueprint("metrics", __name__)


@blueprint.get("/metrics")
async def metrics():
    s = services()
    if not may_scrape(remote_address(), request.headers, plain(s.settings.metrics_token)):
        raise Forbidden(REFUSAL, "METRICS_FORBIDDEN")
    return Response(generate_latest(s.metrics.registry), content_type=CONTENT_TYPE_LATEST)
