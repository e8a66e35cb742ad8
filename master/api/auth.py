"""Pairing and token refresh (§3.1, §3.3, §3.4.1): EP-M0, EP-M1, EP-M2."""

from __future__ import annotations

from urllib.parse import quote

from quart import Blueprint, request

from master.api.common import json_body, limit_by_address, services
from master.services.pairing import PAIR_PATH
from rawp.rest import PairRequest, RefreshRequest
from runtime.http import validate

blueprint = Blueprint("auth", __name__)


@blueprint.get(PAIR_PATH)
async def pairing_note():
    """A person who opens the pairing URL learns what to do with it; the token stays unused."""
    await limit_by_address()
    token = request.args.get("token", "")
    url = f"{services().settings.base_url}{PAIR_PATH}?token={quote(token)}"
    return {
        "message": "This is a RAWP pairing URL. On the machine you want to pair, run: "
        f"rawp client pair '{url}'",
        "command": f"rawp client pair '{url}'",
    }


@blueprint.post(PAIR_PATH)
async def pair():
    await limit_by_address()
    body = validate(PairRequest, await json_body())
    return (await services().pairing.pair(body)).wire()


@blueprint.post("/v1/auth/refresh")
async def refresh():
    await limit_by_address()
    body = validate(RefreshRequest, await json_body())
    return (await services().tokens.refresh(body.refresh_token)).wire()
