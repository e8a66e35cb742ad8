"""Building the Edge API's services on top of the control plane's (master.wiring)."""

from __future__ import annotations

from dataclasses import dataclass

from master.client_calls import ClientCaller
from master.edge.access.auth import EdgeAuth
from master.edge.access.tickets import EdgeTickets
from master.edge.links.dataplane import DataPlane, NodeErrors
from master.edge.links.policy import SecurityPolicy
from master.edge.relay.relay import Relay
from master.edge.sessions.agent_sessions import EdgeAgentSessions
from master.edge.sessions.nodes import NodeDirectory
from master.edge.sessions.schedule_runs import ScheduledRuns
from master.edge.sessions.scheduler import Scheduler
from master.edge.sessions.schedules import EdgeSchedules
from master.edge.sessions.sessions import EdgeSessions
from master.edge.sessions.worktrees import EdgeWorktrees
from master.edge.usage.audit import AuditLog
from master.edge.usage.budgets import BudgetGuard
from master.edge.usage.usage import UsageBook
from master.edge.usage.usage_report import UsageReports
from master.metrics import MasterMetrics
from master.services.config_scopes import ConfigScopes
from master.services.session_start import SessionStarter
from master.services.sockets import NodeSockets
from master.settings import EdgeSettings
from master.storage.db import Database
from rawp.clock import Clock
from rawp.tokens import SigningKey


@dataclass
class EdgeServices:
    settings: EdgeSettings
    auth: EdgeAuth
    relay: Relay
    plane: DataPlane
    nodes: NodeDirectory
    sessions: EdgeSessions
    usage: UsageBook
    worktrees: EdgeWorktrees  # issue 30 §3: a session's git worktree, diffed, merged, discarded
    audit: AuditLog  # issue 15 §4: approval outcomes the gateway reports
    reports: UsageReports  # issue 16 §4: GET /v1/edge/usage
    schedules: EdgeSchedules  # issue 30 §5: scheduled prompts, kept by the master
    scheduler: Scheduler  # … and run, one run per tick across replicas
    agent_sessions: EdgeAgentSessions  # issue 30 §2: terminal conversations to pick up

    async def start(self) -> None:
        """When the server starts serving (never in one-shot commands such as pairing-url)."""
        await self.plane.start()
        await self.sessions.start()
        await self.scheduler.start()

    async def close(self) -> None:
        await self.scheduler.close()
        await self.sessions.close()
        await self.plane.close()


def build_edge(
    *,
    settings: EdgeSettings,
    clock: Clock,
    db: Database,
    key: SigningKey,
    relay: Relay,
    config: ConfigScopes,
    calls: ClientCaller,
    starter: SessionStarter,
    sockets: NodeSockets,
    metrics: MasterMetrics | None = None,
) -> EdgeServices:
    usage = UsageBook(db, clock, metrics)
    errors = NodeErrors()
    policy = SecurityPolicy(settings.deny_tools, settings.deny_commands)
    budgets = BudgetGuard(settings.budgets, db, clock)
    plane = DataPlane(relay, usage, policy, errors, clock, metrics, budgets)
    nodes = NodeDirectory(db, clock, config, calls, usage, errors, settings)
    reports = UsageReports(db, clock, usage, budgets)
    sessions = EdgeSessions(
        db=db,
        clock=clock,
        config=config,
        calls=calls,
        starter=starter,
        tickets=EdgeTickets(db, clock, settings.ticket_ttl),
        relay=relay,
        plane=plane,
        nodes=nodes,
        sockets=sockets,
        settings=settings,
    )
    return EdgeServices(
        settings=settings,
        auth=EdgeAuth(key, clock, settings),
        relay=relay,
        plane=plane,
        nodes=nodes,
        sessions=sessions,
        worktrees=EdgeWorktrees(db, calls, sessions),
        usage=usage,
        audit=AuditLog(db, clock),
        reports=reports,
        schedules=EdgeSchedules(db, clock, nodes),
        scheduler=Scheduler(
            db, clock, ScheduledRuns(sessions, plane, clock), settings.schedule_scan_seconds
        ),
        agent_sessions=EdgeAgentSessions(calls, nodes),
    )
