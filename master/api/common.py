"""What every handler needs: the services, the JSON body, the caller's identity and budget."""

from __future__ import annotations

from typing import Any

from quart import current_app, request

from master.storage.nodes import Node
from master.wiring import Services
from runtime.http import json_object

EXTENSION = "rawp_master"


def services() -> Services:
    return current_app.extensions[EXTENSION]


async def json_body() -> dict[str, Any]:
    """The request body as one JSON object: 400 if malformed, 413 if too large (§7.1)."""
    limit = services().settings.max_body_bytes
    raw = await request.get_data(cache=False)
    return json_object(raw, max_bytes=limit)


def remote_address() -> str:
    return request.remote_addr or "unknown"


async def limit_by_address() -> None:
    """§7.1 budget of an unauthenticated route (pair, refresh), per remote address."""
    s = services()
    await s.limiter.hit(f"addr:{remote_address()}", s.settings.auth_budget)


async def authenticated_node() -> Node:
    """The node behind the Bearer token (401 otherwise), charged against its budget (429)."""
    s = services()
    node = await s.tokens.authenticate(request.headers.get("Authorization"))
    await s.limiter.hit(f"node:{node.id}", s.settings.node_budget)
    return node
