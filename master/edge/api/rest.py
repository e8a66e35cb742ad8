"""The Edge REST API (RAWP §9.1–§9.3, plus the A-22 ticket extension, pairing URLs and the
approval audit of issue 15 §4, and the scheduled prompts of issue 30 §5).

Every route but the token exchange needs `Authorization: Bearer <user token>` (E-AUTH-02) and
spends the user's rate budget; handlers stay thin and call the edge services.
"""

from __future__ import annotations

from typing import Any

from quart import Blueprint, Response, request

from master.api.common import json_body, remote_address, services
from master.edge.access.auth import EdgeUser
from master.edge.wiring import EdgeServices
from master.settings import EdgeSettings
from rawp.clock import iso
from rawp.rest import PairingUrl

blueprint = Blueprint("edge", __name__)


def edge() -> EdgeServices:
    return services().edge


async def user() -> EdgeUser:
    """The caller (401 otherwise), charged against their budget (429)."""
    s = services()
    who = await s.edge.auth.authenticate(request.headers.get("Authorization"))
    settings: EdgeSettings = s.settings.edge
    await s.limiter.hit(f"user:{who.id}", settings.budget_of(who.id))
    return who


@blueprint.post("/v1/edge/auth/token")
async def issue_user_token():
    """§9.1: the edge service credential buys a short-lived token for one platform user."""
    s = services()
    # A gateway asks for many users' tokens: the per-user budget, per remote address.
    await s.limiter.hit(f"edge-token:{remote_address()}", s.settings.edge.user_budget)
    body = await json_body()
    return edge().auth.issue(request.headers.get("Authorization"), body.get("subject"))


@blueprint.post("/v1/edge/pairing-urls")
async def create_pairing_url():
    """A pairing URL for a machine that will belong to the caller (§3.1; the chat "pair")."""
    who = await user()
    ticket = await services().pairing.issue(who.id)
    seconds = int((ticket.expires_at - services().clock.now()).total_seconds())
    made = PairingUrl(pairing_url=ticket.url, expires_at=iso(ticket.expires_at), expires_in=seconds)
    return made.wire(), 201


@blueprint.get("/v1/edge/nodes")
async def list_nodes():
    return await edge().nodes.list(await user())


@blueprint.get("/v1/edge/nodes/<node_id>/metrics")
async def node_metrics(node_id: str):
    return await edge().nodes.metrics(await user(), node_id, request.args.get("period"))


@blueprint.get("/v1/edge/usage")
async def usage_report():
    """Issue 16 §4: the caller's usage per node (today, this month), and a session's."""
    who = await user()
    return await edge().reports.report(who, request.args.get("session_id") or None)


@blueprint.get("/v1/edge/nodes/<node_id>/config")
async def node_config(node_id: str):
    return await edge().nodes.config(await user(), node_id)


@blueprint.get("/v1/edge/nodes/<node_id>/agent-sessions")
async def list_agent_sessions(node_id: str):
    """Issue 30 §2: the agents' own conversations there that RAWP did not start (owner only)."""
    who = await user()
    return await edge().agent_sessions.list(who, node_id, request.args.get("agent") or None)


@blueprint.post("/v1/edge/nodes/<node_id>/sessions")
async def create_session(node_id: str):
    who = await user()
    body: dict[str, Any] = await json_body()
    return await edge().sessions.create(who, node_id, body), 201


@blueprint.get("/v1/edge/sessions")
async def list_sessions():
    who = await user()
    return await edge().sessions.list(who, request.args.get("status"), request.args.get("node_id"))


@blueprint.delete("/v1/edge/sessions/<session_id>")
async def delete_session(session_id: str):
    await edge().sessions.terminate(await user(), session_id)
    return Response(status=204)


@blueprint.post("/v1/edge/sessions/<session_id>/tickets")
async def new_ticket(session_id: str):
    """A-22: a fresh single-use edge_ws_ticket (reconnect, second device)."""
    return await edge().sessions.new_ticket(await user(), session_id), 201


@blueprint.post("/v1/edge/sessions/<session_id>/worktree")
async def session_worktree(session_id: str):
    """Issue 30 §3: diff, merge or discard the session's git worktree (owner only)."""
    who = await user()
    return await edge().worktrees.act(who, session_id, await json_body())


@blueprint.post("/v1/edge/sessions/<session_id>/audit")
async def record_audit(session_id: str):
    """Issue 15 §4: the gateway reports an approval's outcome (master/edge/usage/audit.py)."""
    who = await user()
    return await edge().audit.record(who, session_id, await json_body()), 201


@blueprint.get("/v1/edge/audit")
async def list_audit():
    """The caller's own approval records, newest first (master/edge/usage/audit.py rule 4)."""
    who = await user()
    args = request.args
    return await edge().audit.list(who, args.get("node_id"), args.get("since"), args.get("limit"))


@blueprint.post("/v1/edge/schedules")
async def create_schedule():
    """Issue 30 §5: a prompt run on a schedule (master/edge/sessions/schedules.py)."""
    who = await user()
    return await edge().schedules.create(who, await json_body()), 201


@blueprint.get("/v1/edge/schedules")
async def list_schedules():
    return await edge().schedules.list(await user())


@blueprint.post("/v1/edge/schedules/<schedule_id>/pause")
async def pause_schedule(schedule_id: str):
    return await edge().schedules.pause(await user(), schedule_id, True)


@blueprint.post("/v1/edge/schedules/<schedule_id>/resume")
async def resume_schedule(schedule_id: str):
    return await edge().schedules.pause(await user(), schedule_id, False)


@blueprint.delete("/v1/edge/schedules/<schedule_id>")
async def delete_schedule(schedule_id: str):
    await edge().schedules.delete(await user(), schedule_id)
    return Response(status=204)
