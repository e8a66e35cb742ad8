"""`GET /v1/health` on the master: for load balancers and the Docker healthcheck.

Answers `200 {"status": "online", "uptime": s, "version": "…"}` when the database answers,
and `503` with the §7.1 body when it does not, so an orchestrator restarts or drains a master
that cannot work.
Carries nothing about nodes or users, so it needs no token.
"""

from __future__ import annotations

import time

import sqlalchemy as sa
from quart import Blueprint

from master.api.common import services
from rawp import __version__
from rawp.errors import ServiceUnavailable

blueprint = Blueprint("health", __name__)
STARTED = time.monotonic()


@blueprint.get("/v1/health")
async def health():
    try:
        async with services().db.connect() as conn:
            await conn.execute(sa.text("SELECT 1"))
    except Exception:
        raise ServiceUnavailable(
            "the master cannot reach its database", "DATABASE_UNAVAILABLE"
        ) from None
    uptime = round(time.monotonic() - STARTED, 3)
    return {"status": "online", "uptime": uptime, "version": __version__}  # for `rawp doctor`
