"""The session table (RAWP §5): `session/init`, binding a socket, DELETE, expiry.

Rules:

1. `init` with `reattach: false` creates an INIT session for a listed, active agent in a
   confined workspace; a `session_id` this client has ever seen is a 409 (C-SESS-05, and A-14:
   also for INIT/DETACHED/TERMINATED ids, so an id names one session only).
2. `init` with `reattach: true` on an unknown or TERMINATED session is a 404 (C-SESS-04);
   otherwise it registers the new ticket and remembers `last_message_id` for the replay.
3. A ticket binds a socket once (`TicketStore.burn`); the session must still be alive.
4. `sweep` terminates INIT sessions whose ticket expired unused and DETACHED sessions whose
   `reattach_window` has passed (dps-profile §8). It runs on a timer and before every init.
5. `count` is every session not TERMINATED: health is `busy` from the moment init succeeds
   until the last session ends (C-HLTH-02, A-11).
7. A session asked to (`worktree` in init, or on its agent) works in its own git worktree
   (client.sessions.worktrees), kept after the session ends until it is merged or discarded.
8. The manager owns the tasks that end sessions and the expiry sweep (issue 14 §6), in a
   `TaskOwner` that runs from `start()` to `close()` (the app's lifespan); `close()` ends
   every session and waits until each agent is gone.
9. `resume` in init names an earlier session of this client: the new session's agent continues
   that session's conversation (client.sessions.resumes); every agent's conversation id is
   recorded as soon as it is known, with the workspace it runs in, where a resumed session
   runs too (no new worktree is made for it: a resumed session inherits the earlier one's
   worktree record, client.sessions.worktrees rule 6). With `fork` the agent continues a copy
   under a new id (Claude Code `--fork-session`), so the earlier session may still be running.
10. `resume_conversation` in init names a conversation the agent keeps itself that RAWP did not
   start (a terminal session): accepted only when `GET /v1/agent-sessions` would list it for
   that agent (client.sessions.terminal), and continued in the directory it ran in.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from client.agents import create_agent, kind_class
from client.agents.base import AgentSpec
from client.files.paths import PathGuard
from client.link.tickets import TicketStore
from client.metrics import ClientMetrics
from client.processes.children import AgentProcesses
from client.sessions.resumes import AgentSession, AgentSessions
from client.sessions.session import Session
from client.sessions.terminal import TerminalConversations
from client.sessions.worktrees import ACTIONS, Worktrees
from rawp.clock import Clock, is_uuid4
from rawp.config import PinnedConfig
from rawp.errors import BadRequest, Conflict, Forbidden, NotFound
from rawp.rest import SessionInit
from rawp.session_state import SessionState
from runtime.tasks import TaskOwner

log = logging.getLogger(__name__)

TOMBSTONES = 10_000  # ids of ended sessions remembered for rule 1


class SessionManager:
    def __init__(
        self,
        *,
        agents: dict[str, AgentSpec],
        guard: PathGuard,
        tickets: TicketStore,
        clock: Clock,
        kill_grace: float,
        turn_queue_max: int,
        pinned: Any,  # () -> PinnedConfig, the snapshot last synced
        processes: AgentProcesses | None = None,
        metrics: ClientMetrics | None = None,
        worktrees: Worktrees | None = None,
        resumes: AgentSessions | None = None,
    ) -> None:
        self.metrics = metrics or ClientMetrics()
        self.metrics.sessions = lambda: self.sessions.values()
        self.agents = agents
        self.guard = guard
        self.tickets = tickets
        self.clock = clock
        self.kill_grace = kill_grace
        self.turn_queue_max = turn_queue_max
        self.pinned = pinned
        self.processes = processes or AgentProcesses()
        self.worktrees = worktrees
        self.resumes = resumes
        self.terminal = TerminalConversations(guard, resumes)  # rule 10
        self.sessions: dict[str, Session] = {}
        self._ended: OrderedDict[str, None] = OrderedDict()
        self._ending: dict[str, asyncio.Task] = {}
        self.tasks = TaskOwner("client sessions", log)

    @property
    def count(self) -> int:
        return len(self.sessions)

    async def init(self, request: SessionInit) -> tuple[int, dict[str, Any]]:
        if not is_uuid4(request.session_id):
            raise BadRequest("session_id must be a UUID v4", "INVALID_SESSION_ID")
        if not request.ticket:
            raise BadRequest("ticket must not be empty", "INVALID_REQUEST")
        if request.last_message_id is not None and not is_uuid4(request.last_message_id):
            raise BadRequest("last_message_id must be a UUID", "INVALID_REQUEST")
        await self.sweep()
        if request.reattach:
            return 200, self._reattach(request)
        return 201, await self._create(request)

    def _reattach(self, request: SessionInit) -> dict[str, Any]:
        session = self.sessions.get(request.session_id)
        if session is None or session.state == SessionState.TERMINATED:
            raise NotFound("no such session (it may have ended)", "SESSION_NOT_FOUND")
        session.reattach_cursor = request.last_message_id
        session.reattaching = session.state != SessionState.INIT
        self.tickets.register(request.ticket, session.id)
        return self._body(session)

    async def _create(self, request: SessionInit) -> dict[str, Any]:
        missing = [f for f in ("agent_name", "workspace_path") if not getattr(request, f)]
        if missing:
            raise BadRequest(f"required when reattach is false: {', '.join(missing)}")
        if request.session_id in self.sessions or request.session_id in self._ended:
            raise Conflict("this session_id is already in use", "SESSION_EXISTS")
        spec = self.agents.get(request.agent_name or "")
        # §7.2 / R-38: only agents listed (and active) in the agents file can run.
        if spec is None or not spec.is_active:
            raise Forbidden(
                f"agent {request.agent_name!r} is not allowed here", "AGENT_NOT_ALLOWED"
            )
        resume = await self._conversation(request, spec)
        if resume is not None and resume.workspace:  # rule 9: where the conversation ran
            workspace = self.guard.workspace(resume.workspace)
        else:
            workspace = self.guard.workspace(request.workspace_path)
        if resume is None and (request.worktree or spec.settings.worktree):
            workspace = await self._worktree(request.session_id, workspace)
        inherited = self._inherit(request)
        try:
            return await self._start(request, spec, workspace, resume)
        except BaseException:
            if inherited and self.worktrees is not None:
                self.worktrees.inherit(request.session_id, request.resume or "")  # given back
            elif self.worktrees is not None and request.session_id in self.worktrees.records:
                await self.worktrees.discard(request.session_id)  # nothing ran in it
            raise

    def _inherit(self, request: SessionInit) -> bool:
        """Rule 9: a resumed (not forked) session takes over the earlier one's worktree, so
        the worktree command acts on it from the resumed thread (worktrees rule 6)."""
        if self.worktrees is None or request.resume is None or request.fork:
            return False
        return self.worktrees.inherit(request.resume, request.session_id)

    async def _conversation(self, request: SessionInit, spec: AgentSpec) -> AgentSession | None:
        """Rule 9: the agent's own id of the conversation to resume, or None; rule 10 for a
        conversation RAWP did not start."""
        if request.resume_conversation is not None:
            return await self._terminal_conversation(request, spec)
        if request.resume is None:
            if request.fork:
                raise BadRequest("fork needs resume: the session to fork", "INVALID_REQUEST")
            return None
        if not is_uuid4(request.resume):
            raise BadRequest("resume must be a session id (UUID v4)", "INVALID_REQUEST")
        if not kind_class(spec.kind).resumable:
            raise BadRequest(
                f"agent {spec.name!r} ({spec.kind}) cannot resume an earlier conversation",
                "RESUME_UNSUPPORTED",
            )
        if request.fork and not kind_class(spec.kind).forkable:
            raise BadRequest(
                f"agent {spec.name!r} ({spec.kind}) cannot fork a conversation",
                "FORK_UNSUPPORTED",
            )
        if request.resume in self.sessions and not request.fork:
            raise Conflict(
                "that session is still running; end it before resuming it", "RESUME_SESSION_ALIVE"
            )
        if self.resumes is None:
            raise NotFound("this client keeps no conversations to resume", "RESUME_NOT_FOUND")
        return self.resumes.lookup(request.resume, spec.name)

    async def _terminal_conversation(self, request: SessionInit, spec: AgentSpec) -> AgentSession:
        """Rule 10: only a conversation the listing returns (client.sessions.terminal rule 4),
        continued where it ran."""
        if request.resume is not None or request.fork:
            raise BadRequest(
                "resume_conversation goes alone: without resume or fork", "INVALID_REQUEST"
            )
        if not kind_class(spec.kind).resumable:
            raise BadRequest(
                f"agent {spec.name!r} ({spec.kind}) cannot resume an earlier conversation",
                "RESUME_UNSUPPORTED",
            )
        found = await self.terminal.find(spec, request.resume_conversation or "")
        return AgentSession(spec.name, found.conversation_id, found.workspace_path)

    async def _worktree(self, session_id: str, workspace: Path) -> Path:
        """Rule 7: the session's own git worktree becomes its workspace."""
        if self.worktrees is None:
            raise BadRequest("this client keeps no worktrees", "WORKTREES_UNAVAILABLE")
        record = await self.worktrees.create(session_id, workspace)
        return Path(record.workspace)

    async def _start(
        self,
        request: SessionInit,
        spec: AgentSpec,
        workspace: Path,
        resume: AgentSession | None,
    ) -> dict[str, Any]:
        pinned: PinnedConfig = self.pinned()
        session = Session(
            request.session_id,
            agent_name=spec.name,
            workspace=workspace,
            pinned=pinned,
            clock=self.clock,
            turn_queue_max=self.turn_queue_max,
            agent_kind=spec.kind,
            metrics=self.metrics,
        )
        agent = create_agent(
            spec,
            workspace=workspace,
            session_id=session.id,
            emit=session.emit,
            kill_grace=self.kill_grace,
            processes=self.processes,
        )
        if resume is not None:
            agent.resume(resume.agent_session_id, fork=bool(request.fork))
        if self.resumes is not None:
            agent.conversation_known = self._recorder(session.id, spec.name, workspace)
        await agent.start()
        await session.start_worker(agent, on_failure=lambda: self.end(session))
        self.sessions[session.id] = session
        self.tickets.register(request.ticket, session.id)
        return self._body(session)

    def _recorder(
        self, session_id: str, agent_name: str, workspace: Path
    ) -> Callable[[str], Awaitable[None]]:
        """Rule 9: what an agent calls with its conversation id."""
        resumes = self.resumes
        assert resumes is not None

        async def record(agent_session_id: str) -> None:
            resumes.remember(session_id, agent_name, agent_session_id, str(workspace))

        return record

    def _body(self, session: Session) -> dict[str, Any]:
        body = {
            "session_id": session.id,
            "status": session.state.value,
            "agent_name": session.agent_name,
            "workspace_path": str(session.workspace),
            "ticket_expires_in": int(self.tickets.ttl),
        }
        made = self.worktrees.records.get(session.id) if self.worktrees is not None else None
        if made is not None:  # extension: the master checks a worktree it asked for was made
            body["worktree_branch"] = made.branch
        return body

    async def worktree(self, session_id: str, action: object) -> dict[str, Any]:
        """Rule 7: `diff`, `merge` or `discard` the session's worktree; the last two end the
        session first, so no agent writes into a worktree being merged or removed."""
        if action not in ACTIONS:
            raise BadRequest(f"action must be one of {', '.join(ACTIONS)}", "INVALID_REQUEST")
        if self.worktrees is None:
            raise NotFound("this session has no worktree", "NO_WORKTREE")
        self.worktrees.get(session_id)
        if action == "diff":
            return await self.worktrees.diff(session_id)
        session = self.sessions.get(session_id)
        if session is not None:
            await self.terminate(session)
        if action == "merge":
            return await self.worktrees.merge(session_id)
        return await self.worktrees.discard(session_id)

    def bind(self, ticket: str | None, session_id: str | None) -> Session:
        """Rule 3: the session a WebSocket upgrade may attach to, or 401."""
        self.tickets.burn(ticket, session_id)
        session = self.sessions.get(session_id or "")
        if session is None or session.state == SessionState.TERMINATED:
            raise NotFound("the session has ended", "SESSION_NOT_FOUND")
        return session

    def frames_after(self, session_id: str, after: str) -> dict[str, Any]:
        """What an edge reconnecting with `after` as its cursor is owed (buffer rule 6)."""
        session = self.sessions.get(session_id)
        if session is None or session.state == SessionState.TERMINATED:
            raise NotFound("no such session (it may have ended)", "SESSION_NOT_FOUND")
        resume = session.buffer.after(after)
        self.metrics.replay_frames.observe(len(resume.frames))
        return {
            "session_id": session.id,
            "since_message_id": after,
            "found": resume.found,
            "dropped": resume.dropped,
            "policy": session.limits.buffer_overflow_policy,
            "frames": [entry.text for entry in resume.frames],
        }

    async def delete(self, session_id: str) -> None:
        session = self.sessions.get(session_id)
        if session is None:
            raise NotFound("no such session", "SESSION_NOT_FOUND")
        await self.terminate(session)

    def end(self, session: Session) -> asyncio.Task:
        """Terminate at once (out of the table, health drops), end the agent in a task."""
        task = self._ending.get(session.id)
        if task is not None:
            return task
        session.terminate()
        self.sessions.pop(session.id, None)
        self._ended[session.id] = None
        while len(self._ended) > TOMBSTONES:
            self._ended.popitem(last=False)
        task = self.tasks.spawn(session.shutdown(), name=f"end {session.id}")
        self._ending[session.id] = task
        task.add_done_callback(lambda _t: self._ending.pop(session.id, None))
        return task

    async def terminate(self, session: Session) -> None:
        """End a session and wait until its agent is gone (DELETE answers after this).

        Shielded: a caller that goes away (the DELETE's connection dropped) leaves the ending,
        which the manager owns, to finish."""
        await asyncio.shield(self.end(session))

    async def sweep(self) -> None:
        self.tickets.sweep()
        now = self.clock.monotonic()
        for session in list(self.sessions.values()):
            unused = session.state == SessionState.INIT and not self.tickets.pending_for(session.id)
            expired = (
                session.state == SessionState.DETACHED
                and session.detach_deadline is not None
                and session.detach_deadline <= now
            )
            if unused or expired:
                log.info("session %s ends: %s", session.id, "ticket unused" if unused else "window")
                self.end(session)  # the agent's SIGTERM grace must not hold up the caller

    async def sweep_forever(self, interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            try:
                await self.sweep()
            except Exception:  # keep sweeping; one bad session must not stop expiry
                log.exception("session sweep failed")

    async def start(self, sweep_interval: float) -> None:
        await self.tasks.start()
        self.tasks.spawn(self.sweep_forever(sweep_interval), name="sweep")

    async def close(self) -> None:
        """Rule 8: every session ends, its agent with it; then nothing of ours runs."""
        for session in list(self.sessions.values()):
            self.end(session)
        if self._ending:
            await asyncio.wait(list(self._ending.values()))
        await self.tasks.close()
