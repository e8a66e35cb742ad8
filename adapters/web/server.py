"""The web edge's HTTP server (issue 21): the single-page app, sign-in, a JSON API over the
Edge API for the signed-in chat subject, and the session WebSocket relay (adapters.web.proxy).

Routes (docs/web.md lists them with their answers):

    GET  /                          the app (static/index.html)
    GET  /static/<file>             its files (no listing, no path outside static/)
    GET  /login?t=<token>           redeem a one-time link → cookie, 303 to /
    POST /logout                    clear the cookie
    GET  /api/me                    {"subject", "name"}
    GET  /api/nodes                 {"nodes": [...]} (the Edge API's, verbatim)
    GET  /api/nodes/{id}/agents     {"agents": [{"name", ...}]}
    GET  /api/sessions              {"sessions": [...]} (verbatim)
    POST /api/nodes/{id}/sessions   201 + the session (its ticket removed)
    DELETE /api/sessions/{id}       204
    GET  /api/usage?days=14         {"days": [...]} (adapters.web.usage)
    GET  /api/sessions/{id}/stream  WebSocket relay
    GET  /api/sessions/{id}/prompts {"prompts": [{"message_id", "text", "sent_at"}]}
    …/worktree, /api/voice, /api/schedules   issue 30's routes (adapters.web.features)

Rules:

1. Every error is JSON `{"error_code", "message"}` (the login page's refusal is a small HTML
   page naming `LOGIN_LINK_INVALID`); an unexpected failure is logged here with its traceback
   and answered 500 INTERNAL_ERROR, never with the traceback.
2. Every /api route needs a valid cookie (adapters.web.auth rule 3), else 401 NOT_SIGNED_IN;
   the master is called with the cookie's subject only, so a user sees their own nodes and
   sessions and nobody else's. A master refusal keeps its status and `error_code`; an
   unreachable master is 502 MASTER_UNREACHABLE.
3. The browser never receives the edge secret, an edge token or a WebSocket ticket: the ticket
   in the master's answer to a session start is removed before it is passed on.
4. Responses carry a strict Content-Security-Policy (scripts from this origin only, no
   framing), `nosniff`, no referrer (a login link holds a token), and `/login` is not cached.
"""

from __future__ import annotations

import html
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson
from aiohttp import web

from adapters.web import proxy
from adapters.web.approvals import WebApprovals
from adapters.web.auth import (
    COOKIE,
    CookieSigner,
    WebUser,
    clear_cookie,
    same_origin,
    set_cookie,
)
from adapters.web.features import WebFeatures
from adapters.web.usage import parse_days, usage_days
from gateway.edge_client import EdgeApiError, EdgeClient
from gateway.sessions.voice import Transcriber
from gateway.settings import WebSettings
from gateway.storage.web_logins import WebLogins
from gateway.storage.web_prompts import WebPrompts, prompt_of

log = logging.getLogger(__name__)

STATIC = Path(__file__).resolve().parent / "static"
STOP_S = 5.0  # how long a stopping server waits for requests still being answered
USER = web.RequestKey("user", WebUser)
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
        "form-action 'self'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}
# Fields of the master's session-start answer the browser must not get (rule 3).
TICKET_FIELDS = ("edge_ws_ticket", "ticket_expires_in")
INVALID_LINK_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>Sign-in link not valid</title></head>
<body><h1>This sign-in link does not work</h1>
<p id="error" data-error-code="LOGIN_LINK_INVALID">LOGIN_LINK_INVALID: {message}</p>
<p>Ask for a new one: <code>/rawp web</code> in Discord or Slack,
or restart <code>rawp up</code>.</p>
</body></html>
"""


# The web edge takes the gateway's web settings as they are (one model per process).
WebConfig = WebSettings


def error(status: int, code: str, message: str) -> web.Response:
    return web.json_response({"error_code": code, "message": message}, status=status)


def _json(body: Any, status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(body), status=status, content_type="application/json")


def _refused(exc: EdgeApiError) -> web.Response:
    if exc.status == 0:
        return error(502, "MASTER_UNREACHABLE", "the master did not answer; try again shortly")
    return error(exc.status, exc.error_code, exc.message)


class WebEdge:
    """The app and its server; `link_for(subject)` makes one-time sign-in links."""

    def __init__(
        self,
        edge: EdgeClient,
        logins: WebLogins,
        config: WebConfig,
        *,
        edge_secret: str,
        prompts: WebPrompts,
        agents: Sequence[str] = (),
        transcriber: Transcriber | None = None,
    ) -> None:
        self.edge = edge
        self.logins = logins
        self.prompts = prompts
        self.config = config
        self.cookies = CookieSigner(edge_secret)
        self.agents = tuple(agents)
        # Issue 30's worktree, voice and schedule routes; voice through the chat's transcriber.
        self.features = WebFeatures(edge, transcriber or Transcriber(), lambda r: r[USER])
        self._runner: web.AppRunner | None = None
        self._sockets: set[web.WebSocketResponse] = set()  # relaying now (proxy rule 5)
        self.port: int | None = None

    @property
    def public_url(self) -> str:
        if self.config.public_url:
            return self.config.public_url.rstrip("/")
        host = self.config.host
        if host in ("0.0.0.0", "::", ""):  # a wildcard is no address to open
            host = "127.0.0.1"
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{self.port or self.config.port}"

    async def link_for(self, subject: str, name: str | None = None) -> str:
        token = await self.logins.issue(subject, name)
        return f"{self.public_url}/login?t={token}"

    # --- serving -------------------------------------------------------------------------------

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._errors, self._signed_in])
        app.router.add_get("/", self.index)
        app.router.add_static("/static", STATIC, show_index=False, follow_symlinks=False)
        app.router.add_get("/login", self.login)
        app.router.add_post("/logout", self.logout)
        app.router.add_get("/api/me", self.me)
        app.router.add_get("/api/nodes", self.nodes)
        app.router.add_get("/api/nodes/{node_id}/agents", self.node_agents)
        app.router.add_post("/api/nodes/{node_id}/sessions", self.start_session)
        app.router.add_get("/api/sessions", self.sessions)
        app.router.add_delete("/api/sessions/{session_id}", self.end_session)
        app.router.add_get("/api/sessions/{session_id}/stream", self.stream)
        app.router.add_get("/api/sessions/{session_id}/prompts", self.session_prompts)
        app.router.add_get("/api/usage", self.usage)
        self.features.add_routes(app.router)
        app.on_response_prepare.append(_security_headers)
        return app

    async def start(self) -> None:
        self._runner = web.AppRunner(
            self.app(), access_log=None, handle_signals=False, shutdown_timeout=STOP_S
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.config.host, self.config.port)
        await site.start()
        bound = self._runner.addresses  # the port the system chose for port 0
        self.port = bound[0][1] if bound else self.config.port
        log.info("web edge on %s", self.public_url)

    async def close(self) -> None:
        for ws in list(self._sockets):  # the app reconnects (proxy rule 5)
            await ws.close(code=proxy.MASTER_GONE, message=b"gateway stopping")
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # --- middlewares ---------------------------------------------------------------------------

    @web.middleware
    async def _errors(self, request: web.Request, handler):
        """Rule 1: JSON errors, never a traceback."""
        try:
            return await handler(request)
        except web.HTTPException as exc:
            if exc.status < 400:
                raise
            code = exc.reason.upper().replace(" ", "_")
            return error(exc.status, code, exc.reason)
        except EdgeApiError as exc:
            return _refused(exc)
        except Exception:
            log.exception("web edge: %s %s failed", request.method, request.path)
            return error(500, "INTERNAL_ERROR", "the web edge failed; the error is in its log")

    @web.middleware
    async def _signed_in(self, request: web.Request, handler):
        """Rule 2, and adapters.web.auth rule 4 for requests that change something."""
        if request.method in ("POST", "DELETE", "PUT", "PATCH") and not same_origin(
            request, self.public_url, required=False
        ):
            return error(403, "FOREIGN_ORIGIN", "requests from another site are refused")
        if request.path.startswith("/api/"):
            user = self.cookies.read(request.cookies.get(COOKIE))
            if user is None:
                return error(401, "NOT_SIGNED_IN", "sign in with a link from /rawp web or rawp up")
            request[USER] = user
        return await handler(request)

    # --- pages ---------------------------------------------------------------------------------

    async def index(self, request: web.Request) -> web.StreamResponse:
        response = web.FileResponse(STATIC / "index.html")
        response.headers["Cache-Control"] = "no-cache"
        return response

    async def login(self, request: web.Request) -> web.StreamResponse:
        grant = await self.logins.redeem(request.query.get("t", ""))
        if grant is None:
            message = "it was used already, has expired (links last 10 minutes) or is not one"
            page = INVALID_LINK_PAGE.format(message=html.escape(message))
            response = web.Response(text=page, status=401, content_type="text/html")
        else:
            response = web.Response(status=303, headers={"Location": "/"})
            value = self.cookies.make(WebUser(grant.subject, grant.name))
            https = self.public_url.startswith("https://")
            set_cookie(response, request, value, ttl_s=self.cookies.ttl_s, https=https)
        response.headers["Cache-Control"] = "no-store"
        return response

    async def logout(self, request: web.Request) -> web.StreamResponse:
        response = web.Response(status=204)
        clear_cookie(response)
        return response

    # --- the API -------------------------------------------------------------------------------

    async def me(self, request: web.Request) -> web.StreamResponse:
        user = request[USER]
        return _json({"subject": user.subject, "name": user.name})

    async def nodes(self, request: web.Request) -> web.StreamResponse:
        nodes = await self.edge.list_nodes(request[USER].subject)
        return _json({"nodes": [node.wire() for node in nodes]})

    async def node_agents(self, request: web.Request) -> web.StreamResponse:
        """The node's config names no agents today (docs/edge-api.md); it is read all the same,
        so an unknown node is 404 and one still syncing 503, and any `agents` it lists is used.
        Otherwise the gateway's own agent names (RAWP_GATEWAY_AGENTS) are offered."""
        node_id = request.match_info["node_id"]
        config = await self.edge.call(
            request[USER].subject, "GET", f"/v1/edge/nodes/{quote(node_id, safe='')}/config"
        )
        listed = config.get("agents") if isinstance(config, dict) else None
        if isinstance(listed, list) and listed:
            agents = [a if isinstance(a, dict) else {"name": str(a)} for a in listed]
            return _json({"agents": agents, "source": "node"})
        return _json({"agents": [{"name": n} for n in self.agents], "source": "gateway"})

    async def sessions(self, request: web.Request) -> web.StreamResponse:
        sessions = await self.edge.list_sessions(request[USER].subject)
        return _json({"sessions": [session.wire() for session in sessions]})

    async def start_session(self, request: web.Request) -> web.StreamResponse:
        try:
            body = await request.json(loads=orjson.loads)
        except ValueError:
            return error(400, "INVALID_JSON", "the body must be a JSON object")
        agent = body.get("agent_name") if isinstance(body, dict) else None
        workspace = body.get("workspace_path") if isinstance(body, dict) else None
        if not isinstance(agent, str) or not agent:
            return error(400, "AGENT_NAME_REQUIRED", "agent_name is required")
        if workspace is not None and not isinstance(workspace, str):
            return error(400, "INVALID_WORKSPACE_PATH", "workspace_path must be a string")
        options = _start_options(body)
        if isinstance(options, web.Response):
            return options
        node_id = request.match_info["node_id"]
        created = await self.edge.create_session(
            request[USER].subject, node_id, agent, workspace, **options
        )
        answer = created.wire()
        for name in TICKET_FIELDS:  # rule 3
            answer.pop(name, None)
        return _json(answer, status=201)

    async def end_session(self, request: web.Request) -> web.StreamResponse:
        subject, session_id = request[USER].subject, request.match_info["session_id"]
        await self.edge.end_session(subject, session_id)
        await self.prompts.forget(subject, session_id)  # gateway.storage.web_prompts rule 3
        return web.Response(status=204)

    async def session_prompts(self, request: web.Request) -> web.StreamResponse:
        """The reader's own prompts in this session, oldest first (gateway.storage.web_prompts): a
        reloaded page puts each above its turn. Only the cookie's subject's rows are read, so
        another user's session answers an empty list, never their prompts."""
        found = await self.prompts.of_session(
            request[USER].subject, request.match_info["session_id"]
        )
        return _json({"prompts": [p.__dict__ for p in found]})

    async def usage(self, request: web.Request) -> web.StreamResponse:
        days = parse_days(request.query.get("days"))
        if days is None:
            return error(400, "INVALID_DAYS", "days must be a whole number from 1 to 92")
        found = await usage_days(self.edge, self.logins, request[USER].subject, days)
        return _json({"days": found})

    async def stream(self, request: web.Request) -> web.StreamResponse:
        if not same_origin(request, self.public_url, required=True):
            return error(403, "FOREIGN_ORIGIN", "the session stream is for this site's page only")
        if not web.WebSocketResponse().can_prepare(request).ok:
            return error(400, "WEBSOCKET_REQUIRED", "open this URL as a WebSocket")
        session_id = request.match_info["session_id"]
        try:
            upstream = await proxy.open_upstream(
                self.edge,
                request[USER].subject,
                session_id,
                request.query.get("last_message_id") or None,
            )
        except proxy.UpstreamRefused as refused:
            return error(refused.status, refused.error_code, refused.message)
        subject = request[USER].subject
        approvals = WebApprovals(self.edge, subject, session_id)

        async def remember(text: str) -> None:  # proxy rule 7
            found = prompt_of(text, session_id)
            if found is not None:
                await self.prompts.record(subject, session_id, *found)

        return await proxy.relay(request, upstream, session_id, self._sockets, approvals, remember)


def _start_options(body: dict[str, Any]) -> dict[str, Any] | web.Response:
    """Issue 30: `worktree` (§3), `resume` (§2: an ended session of the caller's) and `fork`
    (with `resume`: a copy of that conversation). The master checks that the session named is
    the caller's, on this node with this agent (docs/edge-api.md)."""
    worktree, resume, fork = body.get("worktree"), body.get("resume"), body.get("fork")
    if worktree is not None and not isinstance(worktree, bool):
        return error(400, "INVALID_REQUEST", "worktree must be true or false")
    if fork is not None and not isinstance(fork, bool):
        return error(400, "INVALID_REQUEST", "fork must be true or false")
    if resume is not None and (not isinstance(resume, str) or not resume):
        return error(400, "INVALID_REQUEST", "resume must be a session id")
    if fork and resume is None:
        return error(400, "INVALID_REQUEST", "fork needs the session to fork in resume")
    if fork:
        return {"worktree": bool(worktree), "fork_of": resume}
    return {"worktree": bool(worktree), "resume": resume}


async def _security_headers(request: web.Request, response: web.StreamResponse) -> None:
    for name, value in SECURITY_HEADERS.items():  # rule 4
        response.headers.setdefault(name, value)
