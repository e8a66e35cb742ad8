"""The local client's Quart application: services built once, blueprints kept thin.

`create_app(settings, clock=…)` wires the services (session table, tickets, path guard,
token check, file search, master link, agent processes) and registers the blueprints.

While serving (the lifespan, which owns its tasks: issue 14 §6): first the agent process
groups a previous run left are ended (client.processes.groups), then the expiry sweep and the
config sync with the master start; all of it stops with the server, every agent with it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from quart import Quart
from tenacity import AsyncRetrying, retry_if_exception_type, wait_exponential_jitter
from werkzeug.exceptions import HTTPException

from client.agents import load_agents
from client.agents.base import AgentSpec
from client.api.common import error_response
from client.api.metrics import metrics
from client.api.routes import agents, auth, fs, health, session
from client.api.stream import stream
from client.files.paths import PathGuard
from client.link.auth import ClientAuth
from client.link.master import MasterLink, MasterLinkError
from client.link.tickets import TicketStore
from client.processes.children import AgentProcesses
from client.processes.groups import GroupRecord
from client.sessions.resumes import AgentSessions
from client.sessions.table import SessionManager
from client.sessions.worktrees import Worktrees
from client.settings import ClientSettings
from client.state import StateDir
from rawp.clock import SYSTEM_CLOCK, Clock, new_id
from rawp.errors import RawpError
from rawp.events import FileCandidates, FileSearch
from runtime.logs import REQUEST_ID
from runtime.rate_limit import Budget, MemoryRateLimiter
from runtime.tasks import TaskOwner

log = logging.getLogger(__name__)


class SearchUnavailable:
    """Stands in when the file index (client/files/search) is not installed."""

    async def search(self, request: FileSearch, workspace: Any) -> FileCandidates:
        raise RuntimeError("file search is not available in this build")

    async def close(self) -> None:
        return None


def default_search(settings: ClientSettings) -> Any:
    try:
        from client.files.search import FileSearchService
    except ImportError:
        log.warning("client.files.search is missing: file search answers FILE_SEARCH_FAILED")
        return SearchUnavailable()
    return FileSearchService(settings.roots)


@dataclass
class Services:
    settings: ClientSettings
    clock: Clock
    state: StateDir
    auth: ClientAuth
    guard: PathGuard
    agents: dict[str, AgentSpec]
    tickets: TicketStore
    sessions: SessionManager
    link: MasterLink
    search: Any
    rate: MemoryRateLimiter  # §4.1.5: one bucket for every authenticated request
    rate_budget: Budget
    processes: AgentProcesses
    started: float
    # The lifespan's own work (the config sync); the session table owns its sweep.
    tasks: TaskOwner = field(default_factory=lambda: TaskOwner("client", log))


def build_services(
    settings: ClientSettings, clock: Clock = SYSTEM_CLOCK, search: Any = None
) -> Services:
    state = StateDir.open(settings.state_dir)
    guard = PathGuard(settings.roots)
    tickets = TicketStore(clock, settings.ticket_ttl)
    link = MasterLink(state, settings, clock=clock)
    processes = AgentProcesses(GroupRecord(settings.state_dir))
    sessions = SessionManager(
        agents=load_agents(settings.agents_file),
        guard=guard,
        tickets=tickets,
        clock=clock,
        kill_grace=settings.kill_grace,
        turn_queue_max=settings.turn_queue_max,
        pinned=link.pinned,
        processes=processes,
        worktrees=Worktrees(settings.state_dir, guard),
        resumes=AgentSessions(settings.state_dir),
    )
    return Services(
        settings=settings,
        clock=clock,
        state=state,
        auth=ClientAuth(state, settings.access_token_ttl, clock),
        guard=guard,
        agents=sessions.agents,
        tickets=tickets,
        sessions=sessions,
        link=link,
        search=search if search is not None else default_search(settings),
        rate=MemoryRateLimiter(clock),
        rate_budget=Budget.parse(f"{settings.limits.rate_limit}/s"),
        processes=processes,
        started=clock.monotonic(),
    )


async def sync_until_done(link: MasterLink, first_wait: float = 1.0) -> None:
    """Sync both scopes; while the master is unreachable, try again with backoff (K-03: it
    starts no session on this node before the sync). The waits double up to 60 s, with jitter
    so nodes cut off together do not come back in step; cancelling the task ends them at once."""
    retrying = AsyncRetrying(
        retry=retry_if_exception_type(MasterLinkError),
        wait=wait_exponential_jitter(multiplier=first_wait, max=60.0, jitter=first_wait),
    )
    async for attempt in retrying:
        with attempt:
            await link.sync_on_start()


def create_app(
    settings: ClientSettings, clock: Clock = SYSTEM_CLOCK, *, search: Any = None
) -> Quart:
    app = Quart("rawp-client")
    svc = build_services(settings, clock, search)
    app.config["client_services"] = svc
    for blueprint in (health, agents, fs, session, auth, stream, metrics):
        app.register_blueprint(blueprint)

    @app.before_request
    @app.before_websocket
    async def name_the_request() -> None:
        # runtime.logs rule 1: every line logged while serving it names this request.
        REQUEST_ID.set(new_id())

    @app.errorhandler(RawpError)
    async def rawp_error(exc: RawpError):
        return error_response(exc)

    @app.errorhandler(HTTPException)
    async def http_error(exc: HTTPException):
        code = (exc.name or "error").upper().replace(" ", "_")
        return error_response(RawpError(exc.description or exc.name, code, status=exc.code))

    @app.errorhandler(Exception)
    async def unexpected(exc: Exception):
        log.exception("unhandled error")
        return error_response(RawpError("internal error", "INTERNAL_ERROR"))

    @app.while_serving
    async def lifespan():
        record = svc.processes.record
        if record is not None:  # before any session: no agent of ours runs yet
            await record.end_leftovers(settings.kill_grace)
        await svc.sessions.start(settings.sweep_interval)
        await svc.tasks.start()
        if svc.state.credentials.paired:
            # C-CFG-01: both scopes after every restart
            svc.tasks.spawn(sync_until_done(svc.link), name="config sync")
        try:
            yield
        finally:
            await svc.tasks.close()
            await svc.sessions.close()
            await svc.search.close()
            await svc.link.close()

    return app
