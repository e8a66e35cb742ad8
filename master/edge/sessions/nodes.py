"""A user's nodes as the Edge API shows them (RAWP §9.2; decision K-09).

Status (K-09): the master asks the client's `GET /v1/health` (answers reused for a few
seconds, each call bounded by a timeout). A node that answers is `busy` when its health says
so or sessions are active on it, `online` otherwise — a client `error` status is shown as
`online`, with the error kept as `health.last_error`. A node that does not answer is
`offline`, and so is one the master has not heard from within `offline_after` seconds (its
last successful call, pairing, refresh or health answer), whichever comes first.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from master.client_calls import ClientCaller
from master.edge.access.auth import EdgeUser
from master.edge.links.dataplane import NodeErrors
from master.edge.usage.usage import DEFAULT_PERIOD, PERIODS, UsageBook
from master.services.config_scopes import CAPABILITIES, LIMITS, ConfigScopes
from master.settings import EdgeSettings
from master.storage import edge_sessions as store
from master.storage import nodes as node_store
from master.storage.db import Database, utc
from rawp.clock import Clock, iso
from rawp.errors import BadRequest, NotFound, RawpError
from rawp.rest import NodeInfo, NodeList

log = logging.getLogger("rawp.master.edge.nodes")


@dataclass
class Health:
    checked_at: float  # clock.monotonic()
    reachable: bool
    status: str | None = None  # the client's own word: online / busy / error
    uptime: int | None = None
    error: str | None = None


class NodeDirectory:
    def __init__(
        self,
        db: Database,
        clock: Clock,
        config: ConfigScopes,
        calls: ClientCaller,
        usage: UsageBook,
        errors: NodeErrors,
        settings: EdgeSettings,
    ) -> None:
        self._db = db
        self._clock = clock
        self._config = config
        self._calls = calls
        self._usage = usage
        self._errors = errors
        self._settings = settings
        self._health: dict[str, Health] = {}

    async def owned(self, user: EdgeUser, node_id: str) -> Any:
        """The user's active node, or 404 — the same 404 whether it is someone else's or none."""
        async with self._db.connect() as conn:
            row = await store.user_node(conn, user.id, node_id)
        if row is None:
            raise NotFound(f"no node {node_id} on your account", "NODE_NOT_FOUND")
        return row

    async def list(self, user: EdgeUser) -> dict[str, Any]:
        """EP-E1."""
        async with self._db.connect() as conn:
            rows = await store.user_nodes(conn, user.id)
            counts = await store.session_counts(conn, [r.id for r in rows])
        healths = await asyncio.gather(*(self.health(r.id) for r in rows))
        async with self._db.connect() as conn:  # health answers moved last_seen forward
            rows = await store.user_nodes(conn, user.id)
        nodes = []
        for row, health in zip(rows, healths, strict=True):
            snapshots = await self._config.snapshots(row.id)
            capabilities = snapshots.get(CAPABILITIES)
            nodes.append(
                NodeInfo(
                    node_id=row.id,
                    device_name=row.device_name,
                    status=self._status(row, health, counts.get(row.id, 0)),
                    last_seen=iso(utc(row.last_seen_at) or utc(row.paired_at)),
                    active_sessions_count=counts.get(row.id, 0),
                    # a scope not synced yet is absent (docs/edge-api.md)
                    config_versions={s: snap.version for s, snap in snapshots.items()},
                    capabilities=list(capabilities.snapshot) if capabilities else None,
                )
            )
        return NodeList(nodes=nodes).wire()

    def _status(self, row: Any, health: Health, sessions: int) -> str:
        last_seen = utc(row.last_seen_at) or utc(row.paired_at)
        silent = self._clock.now() - last_seen > timedelta(seconds=self._settings.offline_after)
        if not health.reachable or silent:
            return "offline"
        return "busy" if health.status == "busy" or sessions else "online"

    async def health(self, node_id: str) -> Health:
        """The client's health, asked at most every `health_cache_seconds`."""
        now = self._clock.monotonic()
        known = self._health.get(node_id)
        if known is not None and now - known.checked_at < self._settings.health_cache_seconds:
            return known
        try:
            reply = await asyncio.wait_for(
                self._calls.call(node_id, "GET", "/v1/health"), self._settings.health_timeout
            )
        except (RawpError, TimeoutError) as exc:
            message = exc.message if isinstance(exc, RawpError) else "no answer in time"
            health = Health(now, False, error=f"health check failed: {message}")
        else:
            body = reply.body if isinstance(reply.body, dict) else {}
            if reply.status == 200:
                uptime = body.get("uptime")
                health = Health(
                    now,
                    True,
                    status=str(body.get("status")),
                    uptime=uptime if isinstance(uptime, int) else None,
                    error="the client reports status error"
                    if body.get("status") == "error"
                    else None,
                )
                async with self._db.begin() as conn:
                    await node_store.touch_node(conn, node_id, self._clock.now())
            else:
                health = Health(now, False, error=f"health answered HTTP {reply.status}")
        self._health[node_id] = health
        return health

    async def metrics(self, user: EdgeUser, node_id: str, period: str | None) -> dict[str, Any]:
        """EP-E2 (A-19: `today` when `period` is omitted)."""
        await self.owned(user, node_id)
        period = DEFAULT_PERIOD if period is None else period
        if period not in PERIODS:
            raise BadRequest(f"period must be one of {', '.join(PERIODS)}", "INVALID_PERIOD")
        usage = await self._usage.aggregate(node_id, period)
        health = await self.health(node_id)
        body: dict[str, Any] = {"uptime_seconds": health.uptime if health.reachable else 0}
        last_error = self._errors.last.get(node_id) or health.error
        if last_error:
            body["last_error"] = last_error
        return {"node_id": node_id, "period": period, "aggregated_usage": usage, "health": body}

    async def config(self, user: EdgeUser, node_id: str) -> dict[str, Any]:
        """EP-E3: both scopes as held; 503 CONFIG_NOT_SYNCED until both are (K-03)."""
        await self.owned(user, node_id)
        held = await self._config.require_synced(node_id)
        limits, capabilities = held[LIMITS], held[CAPABILITIES]
        return {
            "node_id": node_id,
            "limits": {
                "config_version": limits.version,
                "effective_at": iso(limits.effective_at),
                "limits": limits.snapshot,
            },
            "capabilities": {
                "config_version": capabilities.version,
                "effective_at": iso(capabilities.effective_at),
                "capabilities": list(capabilities.snapshot),
            },
        }
