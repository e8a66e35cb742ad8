"""The client's HTTP endpoints (RAWP §3.4.2, §4.2–§4.4, §5.1–§5.2)."""

from __future__ import annotations

from quart import Blueprint, Response, request

from client.api.common import body, require_master, services
from client.files.fs import list_directory
from rawp.clock import is_uuid4
from rawp.errors import BadRequest, Forbidden
from rawp.rest import AgentConversationList, SessionInit
from runtime.http import validate

health = Blueprint("health", __name__)
agents = Blueprint("agents", __name__)
fs = Blueprint("fs", __name__)
session = Blueprint("session", __name__)
auth = Blueprint("auth", __name__)

for protected in (health, agents, fs, session):
    protected.before_request(require_master)


@health.get("/v1/health")
async def get_health():
    """EP-C2: `busy` while any session exists, `online` otherwise (C-HLTH-02)."""
    svc = services()
    count = svc.sessions.count
    return {
        "status": "busy" if count else "online",
        "uptime": int(svc.clock.monotonic() - svc.started),
        "active_sessions": count,
    }


@agents.get("/v1/agents")
async def get_agents():
    """EP-C3: the agents of the agents file (A-12: `id` and `name` are both the agent name)."""
    svc = services()
    listed = svc.agents.values()
    settings = svc.settings
    default = settings.default_workspace or settings.roots[0]
    return {
        "agents": [{"id": a.name, "name": a.name, "is_active": a.is_active} for a in listed],
        # Extension: where a session starts when the master is given no workspace_path.
        "default_workspace_path": str(default.resolve()),
    }


@agents.get("/v1/agent-sessions")
async def get_agent_sessions():
    """Extension (issue 30 §2, docs/protocol.md): the agents' own conversations in the allowed
    roots that RAWP did not start (client.sessions.terminal); `agent` names one agent."""
    svc = services()
    wanted = request.args.get("agent") or None
    specs = [a for a in svc.agents.values() if a.is_active and wanted in (None, a.name)]
    if wanted is not None and not specs:
        raise Forbidden(f"agent {wanted!r} is not allowed here", "AGENT_NOT_ALLOWED")
    listed = await svc.sessions.terminal.list(specs)
    return AgentConversationList(conversations=listed).wire()


@fs.post("/v1/fs/list")
async def post_fs_list():
    """EP-C4: one directory inside an allowed root (§4.4, §7.2)."""
    data = await body()
    return await list_directory(services().guard, data.get("target_path"))


@session.post("/v1/session/init")
async def post_session_init():
    """EP-C5: 201 for a new session, 200 for a reattach (R-30)."""
    request = validate(SessionInit, await body())
    status, payload = await services().sessions.init(request)
    return payload, status


@session.delete("/v1/session/<session_id>")
async def delete_session(session_id: str):
    """EP-C6: SIGTERM, SIGKILL after the grace period, then 204 (C-SESS-06)."""
    await services().sessions.delete(session_id)
    return Response(status=204)


@session.post("/v1/session/<session_id>/worktree")
async def post_session_worktree(session_id: str):
    """Extension (docs/worktrees.md, issue 30 §3): `diff`, `merge` or `discard` the session's
    git worktree; it outlives the session, so an ended session's worktree is still reached."""
    data = await body()
    return await services().sessions.worktree(session_id, data.get("action"))


@session.get("/v1/session/<session_id>/frames")
async def get_session_frames(session_id: str):
    """Extension (docs/protocol.md, issue 14 §1): the buffered frames after an edge's cursor,
    for a master that no longer holds them itself (it restarted, or evicted them)."""
    after = request.args.get("after", "")
    if not is_uuid4(after):
        raise BadRequest("after must be a message_id (UUID)", "INVALID_REQUEST")
    return services().sessions.frames_after(session_id, after)


@auth.post("/v1/auth/refresh")
async def post_refresh():
    """EP-C1: rotate the master's client tokens (C-AUTH-02)."""
    data = await body()
    token = data.get("refresh_token")
    if not isinstance(token, str) or not token:
        raise BadRequest("refresh_token is required", "INVALID_REQUEST")
    return services().auth.refresh(token).to_body().wire()
