"""A paired node's own endpoints (§3.5, §4.1): EP-M3 … EP-M6."""

from __future__ import annotations

from quart import Blueprint, Response, request

from master.api.common import authenticated_node, json_body, services

blueprint = Blueprint("nodes", __name__)

LEGACY_PATH = "/v1/nodes/config"
# §4.1.9 / M-LEG-04: on every response of the deprecated endpoint, errors included.
LEGACY_WARNING = (
    '299 - "Deprecated: Use PUT /v1/nodes/config/limits and PUT /v1/nodes/config/capabilities"'
)


@blueprint.delete("/v1/nodes/self")
async def unregister():
    node = await authenticated_node()
    await services().pairing.unregister(node)
    return Response(status=204)


@blueprint.put("/v1/nodes/config/limits")
async def put_limits():
    node = await authenticated_node()
    return await services().config.update_limits(node.id, await json_body())


@blueprint.put("/v1/nodes/config/capabilities")
async def put_capabilities():
    node = await authenticated_node()
    return await services().config.update_capabilities(node.id, await json_body())


@blueprint.post(LEGACY_PATH)
async def post_legacy_config():
    node = await authenticated_node()
    return await services().config.update_legacy(node.id, await json_body())


def add_legacy_warning(response: Response) -> Response:
    """Registered app-wide so that 401/404/405/429 answers on the legacy path carry it too."""
    if request.path.rstrip("/") == LEGACY_PATH:
        response.headers["Warning"] = LEGACY_WARNING
    return response
