"""What every handler shares: the services, the bearer check, error bodies (RAWP §4, §7.1)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import orjson
from quart import Response, current_app, request

from rawp.errors import RawpError
from runtime.http import json_object

if TYPE_CHECKING:
    from client.app import Services


def services() -> Services:
    return current_app.config["client_services"]


def error_response(exc: RawpError) -> Response:
    response = Response(orjson.dumps(exc.to_body()), status=exc.status, mimetype="application/json")
    for name, value in exc.headers.items():
        response.headers[name] = value
    return response


async def require_master() -> None:
    """C-AUTH-03: every master→client call carries a client access token we signed."""
    svc = services()
    svc.auth.check(request.headers.get("Authorization"))
    # §4.1.5 rate_limit, counted only for authenticated calls; 429 + Retry-After when spent
    await svc.rate.hit("requests", svc.rate_budget)


async def body() -> dict:
    raw = await request.get_data()
    return json_object(raw, max_bytes=services().settings.max_body_bytes)
