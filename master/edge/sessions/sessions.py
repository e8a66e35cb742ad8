"""Edge sessions (RAWP §9.3): create, list, end, re-ticket, and the edge socket's way in.

Rules:

1. Creating (EP-E4, E-API-07): the node must be the caller's; both config scopes must be
   synced, or `503 CONFIG_NOT_SYNCED` before anything is sent to the client (K-03). Without a
   `workspace_path` the master asks the client's `GET /v1/agents` for its
   `default_workspace_path` and answers `400 WORKSPACE_PATH_REQUIRED` when it names none
   (A-21). Then `session/init` with the pinned config, then the master's WebSocket to the
   client; only then `201` with a fresh `edge_ws_ticket` and the pinned versions. A client
   refusal with 400/403/404/409 reaches the edge with the client's status and code.
2. Listing (EP-E5) never shows TERMINATED sessions (E-API-10); any other `status` filter
   value, TERMINATED included, is `400 INVALID_STATUS` (A-23).
3. Ending (DELETE): the link is closed first (so it does not reattach), then the client's
   `DELETE /v1/session/{id}`, then the edges are closed with code 1000.
4. The client links behind the sessions — held by one replica each, reattached, taken over,
   their state written through — are `HeldLinks`' (master.edge.sessions.held_links).
5. Creating with `resume` (issue 30 §2): the earlier session must be the caller's, on the same
   node with the same agent (`404 SESSION_NOT_FOUND`, `409 RESUME_MISMATCH`); the client then
   refuses what it cannot resume (rule 1 passes its 400/404/409 on).
6. Creating with `resume_conversation` (issue 30 §2): a conversation of the agent's own on the
   caller's node that RAWP did not start (master.edge.sessions.agent_sessions lists them); the
   client accepts only one its own listing returns (404 `RESUME_NOT_FOUND` otherwise).
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from master.client_calls import ClientCaller, NodeCallError
from master.edge.access.auth import EdgeUser
from master.edge.access.tickets import EdgeTickets
from master.edge.links.dataplane import DataPlane
from master.edge.live import RelayedSession
from master.edge.relay.edge_socket import NORMAL
from master.edge.relay.relay import Relay
from master.edge.sessions.held_links import HeldLinks, detached
from master.edge.sessions.nodes import NodeDirectory
from master.services.config_scopes import ConfigScopes
from master.services.session_start import SessionInitFailed, SessionStarter
from master.services.sockets import NodeSockets
from master.settings import EdgeSettings
from master.storage import edge_sessions as store
from master.storage.db import Database, utc
from rawp.clock import Clock, is_uuid4, iso
from rawp.errors import BadRequest, Conflict, NotFound, RawpError
from rawp.rest import (
    ConfigVersions,
    CreateSession,
    SessionCreated,
    SessionInfo,
    SessionList,
    TicketGrant,
)
from rawp.session_state import SessionEvent, SessionState
from runtime.http import validate
from runtime.logs import bind_session

log = logging.getLogger("rawp.master.edge.sessions")

PASSED_ON = (400, 403, 404, 409)  # client refusals the edge can act on (rule 1)


class EdgeSessions:
    def __init__(
        self,
        *,
        db: Database,
        clock: Clock,
        config: ConfigScopes,
        calls: ClientCaller,
        starter: SessionStarter,
        tickets: EdgeTickets,
        relay: Relay,
        plane: DataPlane,
        nodes: NodeDirectory,
        sockets: NodeSockets,
        settings: EdgeSettings,
    ) -> None:
        self._db = db
        self._clock = clock
        self._config = config
        self._calls = calls
        self._starter = starter
        self._tickets = tickets
        self._relay = relay
        self._nodes = nodes
        self._held = HeldLinks(
            db=db,
            clock=clock,
            config=config,
            calls=calls,
            starter=starter,
            relay=relay,
            plane=plane,
            sockets=sockets,
            settings=settings,
        )
        self.live = self._held.live  # the sessions whose client link is held here

    # --- EP-E4 ---------------------------------------------------------------------------------

    async def create(self, user: EdgeUser, node_id: str, body: dict[str, Any]) -> dict[str, Any]:
        await self._nodes.owned(user, node_id)
        request = validate(CreateSession, body)
        await self._config.require_synced(node_id)  # K-03: before any call to the client
        await self._resumable(user, node_id, request)
        workspace = request.workspace_path or await self._default_workspace(node_id)
        try:
            started = await self._starter.start(
                node_id=node_id,
                user_id=user.id,
                agent_name=request.agent_name,
                workspace_path=workspace,
                worktree=bool(request.worktree),
                resume=request.resume,
                fork=bool(request.fork),
                resume_conversation=request.resume_conversation,  # rule 6
            )
        except SessionInitFailed as exc:
            raise _passed_on(exc) from None
        bind_session(started.session_id)  # this request's later lines name it (runtime.logs)
        live = RelayedSession(
            id=started.session_id,
            node_id=node_id,
            user_id=user.id,
            agent_name=request.agent_name,
            limits=started.pinned.limits,
        )
        await self._relay.claim(live.id)  # a new id: no other replica can hold it
        link = self._held.link(live)
        try:
            await link.start(started.stream_url)
        except Exception as exc:
            log.warning("session %s: could not open the data plane: %s", live.id, exc)
            await link.close()
            await self._held.end_on_client(live)
            await self._config.move_session(live.id, SessionEvent.TERMINATE)
            raise NodeCallError(
                "the client accepted the session but its WebSocket could not be opened"
            ) from None
        self._held.adopt(live, link)
        # INIT → RUNNING; the link may have got there first (it dropped and came back), but a
        # DELETE that found the new id in a listing ends it for good (held_links rule 2).
        if (await self._config.move_session(live.id, SessionEvent.ATTACH)).ended:
            await self._held.forget(live, NORMAL, "session terminated")
            raise NotFound("the session was ended while it started", "SESSION_NOT_FOUND")
        ticket = await self._tickets.issue(live.id, user.id)
        log.info("session %s: started on node %s for %s", live.id, node_id, user.id)
        pinned = started.pinned
        return SessionCreated(
            session_id=live.id,
            edge_ws_ticket=ticket,
            ticket_expires_in=self._tickets.ttl,
            status=SessionState.RUNNING.value,
            pinned_config_versions=ConfigVersions(
                limits=pinned.limits_version, capabilities=pinned.capabilities_version
            ),
        ).wire()

    async def _resumable(self, user: EdgeUser, node_id: str, request: CreateSession) -> None:
        """Rule 5: only the caller's own earlier session, on this node with this agent; rule
        6: `resume_conversation` alone."""
        if request.fork and request.resume is None:
            raise BadRequest("fork needs resume: the session to fork", "INVALID_REQUEST")
        if request.resume_conversation is not None and (request.resume or request.fork):
            raise BadRequest(
                "resume_conversation goes alone: without resume or fork", "INVALID_REQUEST"
            )
        if request.resume is None:
            return
        if not is_uuid4(request.resume or ""):
            raise BadRequest("resume must be a session id", "INVALID_REQUEST")
        async with self._db.connect() as conn:
            row = await store.user_session(conn, user.id, request.resume or "", ended=True)
        if row is None:
            raise NotFound(f"no session {request.resume} on your account", "SESSION_NOT_FOUND")
        if row.node_id != node_id or row.agent_name != request.agent_name:
            raise Conflict(
                f"session {request.resume} ran agent {row.agent_name!r} on node {row.node_id}; "
                "resume it there with that agent",
                "RESUME_MISMATCH",
            )

    async def _default_workspace(self, node_id: str) -> str:
        """A-21: the client's advertised default, or a clear 400."""
        reply = await self._calls.call(node_id, "GET", "/v1/agents")
        body = reply.body if reply.status == 200 and isinstance(reply.body, dict) else {}
        default = body.get("default_workspace_path")
        if not isinstance(default, str) or not default:
            raise BadRequest(
                "workspace_path is required: the node advertises no default workspace",
                "WORKSPACE_PATH_REQUIRED",
            )
        return default

    # --- EP-E5 ---------------------------------------------------------------------------------

    async def list(self, user: EdgeUser, status: str | None, node_id: str | None) -> dict[str, Any]:
        wanted = None
        if status is not None:
            if status not in {s.value for s in store.LISTED_STATES}:
                raise BadRequest(
                    "status must be INIT, RUNNING or DETACHED (TERMINATED sessions are never "
                    "listed)",
                    "INVALID_STATUS",
                )
            wanted = SessionState(status)
        if node_id is not None:
            async with self._db.connect() as conn:
                if await store.user_node(conn, user.id, node_id, active=False) is None:
                    raise NotFound(f"no node {node_id} on your account", "NODE_NOT_FOUND")
        async with self._db.connect() as conn:
            rows = await store.user_sessions(conn, user.id, status=wanted, node_id=node_id)
        return SessionList(sessions=[self._describe(row) for row in rows]).wire()

    def _describe(self, row: Any) -> SessionInfo:
        return SessionInfo(
            session_id=row.id,
            node_id=row.node_id,
            agent_name=row.agent_name,
            status=row.status,
            created_at=iso(utc(row.created_at)),
            last_activity_at=iso(self._activity(row)),
            pinned_config_versions=ConfigVersions(
                limits=row.limits_version, capabilities=row.capabilities_version
            ),
        )

    def _activity(self, row: Any):
        """The stored time, or a fresher one from memory (writes are spaced, dataplane)."""
        stored = store.last_activity(row)
        live = self.live.get(row.id)
        if live is None or not live.last_activity:
            return stored
        seconds_ago = self._clock.monotonic() - live.last_activity
        return max(stored, self._clock.now() - timedelta(seconds=seconds_ago))

    # --- DELETE, tickets ---------------------------------------------------------------------

    async def owned(self, user: EdgeUser, session_id: str) -> Any:
        async with self._db.connect() as conn:
            row = await store.user_session(conn, user.id, session_id)
        if row is None:
            raise NotFound(f"no session {session_id} on your account", "SESSION_NOT_FOUND")
        return row

    async def terminate(self, user: EdgeUser, session_id: str) -> None:
        row = await self.owned(user, session_id)
        live = self.live.get(row.id) or detached(row)
        await self._held.forget(live, NORMAL, "session terminated")
        await self._held.end_on_client(live)
        log.info("session %s: ended by %s", live.id, user.id)

    async def new_ticket(self, user: EdgeUser, session_id: str) -> dict[str, Any]:
        """A-22: a fresh single-use ticket, for a reconnect or a second device."""
        row = await self.owned(user, session_id)
        ticket = await self._tickets.issue(row.id, user.id)
        return TicketGrant(
            session_id=row.id, edge_ws_ticket=ticket, ticket_expires_in=self._tickets.ttl
        ).wire()

    # --- the edge WebSocket's way in ---------------------------------------------------------

    async def admit(self, ticket: str | None, session_id: str | None) -> RelayedSession:
        """Burn the ticket and return the live session, reattaching it if needed (held_links
        rule 1)."""
        admission = await self._tickets.burn(ticket, session_id)
        live = self.live.get(admission.session_id)
        if live is not None:
            return live
        async with self._db.connect() as conn:
            row = await store.user_session(conn, admission.user_id, admission.session_id)
        if row is None:
            raise NotFound("the session has ended", "SESSION_NOT_FOUND")
        if await self._relay.claim(row.id):
            return await self._held.resume(row)
        return detached(row)  # another replica holds the link: frames cross the relay

    async def start(self) -> None:
        await self._held.start()

    async def close(self) -> None:
        await self._held.close()


def _passed_on(exc: SessionInitFailed) -> RawpError:
    status = exc.extra.get("client_status")
    code = exc.extra.get("client_error_code")
    if status in PASSED_ON and isinstance(code, str):
        said = exc.extra.get("client_message")
        reason = said if isinstance(said, str) and said else code
        return RawpError(f"the node refused the session: {reason}", code, status=status)
    return exc
