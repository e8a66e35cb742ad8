"""Config scopes (§4.1): versioned full replacement, the initial-sync gate and session pinning.

- Each scope has its own `config_version` (M-CFG-03); an accepted update replaces the whole
  scope (M-CFG-07). A version must be greater than the held one (M-CFG-08), or exactly 1, the
  restart rule that resets the counter (M-CFG-11/12); otherwise `409` with the held version
  (M-CFG-09/10/21). Version 1 arriving while sessions are active is logged as a client restart
  (M-CFG-13).
- `require_synced` is the K-03 gate: no session starts until both scopes are synced.
- `pin_session` binds the latest snapshots to a new session (§4.1.8, M-PIN-02/04); the pinned
  config never changes afterwards, whatever later updates say (M-PIN-01/03).
- A session's state moves only by `move_session(event)`, a conditional write along
  `rawp.session_state`'s table (§5); the caller is told when the row refused the event.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from master.services import config_rules
from master.storage import config as store
from master.storage.db import Database
from rawp.clock import Clock, iso
from rawp.config import Limits, PinnedConfig
from rawp.errors import Conflict, NotFound, ServiceUnavailable
from rawp.session_state import SessionEvent, SessionState

log = logging.getLogger("rawp.master.config")

LIMITS, CAPABILITIES = store.LIMITS, store.CAPABILITIES


class ConfigScopes:
    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    async def update_limits(self, node_id: str, body: dict[str, Any]) -> dict[str, Any]:
        """`PUT /v1/nodes/config/limits` (§4.1.5)."""
        now = self._clock.now()
        envelope, limits = config_rules.validate_limits(body, now)
        return await self._replace(node_id, LIMITS, envelope, limits, now)

    async def update_capabilities(self, node_id: str, body: dict[str, Any]) -> dict[str, Any]:
        """`PUT /v1/nodes/config/capabilities` (§4.1.6)."""
        now = self._clock.now()
        envelope, capabilities = config_rules.validate_capabilities(body, now)
        return await self._replace(node_id, CAPABILITIES, envelope, capabilities, now)

    async def update_legacy(self, node_id: str, body: dict[str, Any]) -> dict[str, Any]:
        """Deprecated `POST /v1/nodes/config` (§4.1.9): both scopes, both at version 1."""
        now = self._clock.now()
        limits, capabilities = config_rules.validate_legacy(body)
        # the legacy body has no effective_at; the time we accept it stands in for it.
        envelope = config_rules.Envelope(1, now, "legacy POST /v1/nodes/config")
        await self._replace(node_id, LIMITS, envelope, limits, now)
        return await self._replace(node_id, CAPABILITIES, envelope, capabilities, now)

    async def _replace(
        self,
        node_id: str,
        scope: str,
        envelope: config_rules.Envelope,
        snapshot: Any,
        now: datetime,
    ) -> dict[str, Any]:
        restart = envelope.config_version == 1
        new = store.ScopeSnapshot(
            scope, envelope.config_version, snapshot, envelope.effective_at, envelope.reason, now
        )
        async with self._db.begin() as conn:
            held = await store.replace_scope(conn, node_id, new, restart=restart)
            if held is not None:
                raise Conflict(
                    f"{scope} config_version {envelope.config_version} is not newer than the "
                    f"held version {held}; resend with a greater version (§4.1.4)",
                    "CONFIG_VERSION_CONFLICT",
                    current_config_version=held,
                )
            active = await store.count_active_sessions(conn, node_id)
        if restart and active:
            # M-CFG-13: version 1 with sessions running means the client restarted.
            log.warning(
                "node %s sent %s config_version 1 while %d session(s) are active: "
                "treating it as a client restart (§4.1.4)",
                node_id,
                scope,
                active,
            )
        return {
            "config_version": envelope.config_version,
            "accepted_at": iso(now),
            "active_sessions_affected": active,
        }

    async def snapshots(self, node_id: str) -> dict[str, store.ScopeSnapshot]:
        async with self._db.connect() as conn:
            return await store.scopes(conn, node_id)

    async def require_synced(self, node_id: str) -> dict[str, store.ScopeSnapshot]:
        """K-03 / M-CFG-04/05: both scopes synced, or `503 CONFIG_NOT_SYNCED`."""
        held = await self.snapshots(node_id)
        missing = [s for s in (LIMITS, CAPABILITIES) if s not in held]
        if missing:
            raise ServiceUnavailable(
                f"the node has not synced its {' and '.join(missing)} config yet; "
                "sessions start once both scopes are synced (§4.1.2)",
                "CONFIG_NOT_SYNCED",
            )
        return held

    async def current_rate_limit(self, node_id: str) -> int | None:
        """The node's synced `rate_limit` (§4.1, M-CFG-01), None before the first sync."""
        held = await self.snapshots(node_id)
        limits = held.get(LIMITS)
        return None if limits is None else int(limits.snapshot["rate_limit"])

    async def pin_session(
        self,
        *,
        session_id: str,
        node_id: str,
        user_id: str,
        agent_name: str,
        workspace_path: str | None,
    ) -> PinnedConfig:
        """Record a new session (INIT) bound to the latest snapshots (§4.1.8, M-PIN-02/04)."""
        held = await self.require_synced(node_id)
        limits, capabilities = held[LIMITS], held[CAPABILITIES]
        now = self._clock.now()
        async with self._db.begin() as conn:
            await store.insert_session(
                conn,
                id=session_id,
                node_id=node_id,
                user_id=user_id,
                agent_name=agent_name,
                workspace_path=workspace_path,
                status=SessionState.INIT.value,
                pinned_limits=limits.snapshot,
                pinned_capabilities=capabilities.snapshot,
                limits_version=limits.version,
                capabilities_version=capabilities.version,
                created_at=now,
                updated_at=now,
            )
        return _pinned(limits.snapshot, capabilities.snapshot, limits.version, capabilities.version)

    async def pinned_config(self, session_id: str) -> PinnedConfig:
        """The config a session was bound to — also on reattach (M-PIN-03)."""
        async with self._db.connect() as conn:
            row = await store.get_session(conn, session_id)
        if row is None:
            raise NotFound(f"no session {session_id}", "SESSION_NOT_FOUND")
        return _pinned(
            row.pinned_limits, row.pinned_capabilities, row.limits_version, row.capabilities_version
        )

    async def session_status(self, session_id: str) -> SessionState:
        async with self._db.connect() as conn:
            row = await store.get_session(conn, session_id)
        if row is None:
            raise NotFound(f"no session {session_id}", "SESSION_NOT_FOUND")
        return SessionState(row.status)

    async def move_session(self, session_id: str, event: SessionEvent) -> store.SessionMove:
        """A conditional state write (§5, master.storage.config): never an assignment."""
        async with self._db.begin() as conn:
            return await store.move_session(conn, session_id, event, self._clock.now())

    async def move_sessions(self, session_ids: list[str], event: SessionEvent) -> int:
        """`move_session` for many, in one transaction; how many moved."""
        async with self._db.begin() as conn:
            return await store.move_sessions(conn, session_ids, event, self._clock.now())


def _pinned(limits: dict, capabilities: list, limits_version: int, caps_version: int):
    return PinnedConfig(
        limits=Limits.model_validate(limits),
        capabilities=tuple(capabilities),
        limits_version=limits_version,
        capabilities_version=caps_version,
    )
