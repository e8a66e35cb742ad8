"""`node.config.changed` (RAWP §9.4.4, E-NOT-01…05; decisions K-07, A-26).

`NotifyingConfigScopes` is the control plane's `ConfigScopes` plus one duty: after a client's
update of a scope is accepted (§4.1.5, §4.1.6, and the deprecated §4.1.9 which replaces both),
the master builds one frame per changed scope — no `session_id`, no `turn_id`, no settings
(E-NOT-02/03), the client's `reason` passed on (E-NOT-05) — and offers that same text, one
`message_id`, to every edge socket connected to any session of the node (E-NOT-04). An edge
holding several sockets for the node gets one copy per socket and can drop the repeats by
`message_id` (A-26). A refused update (409, 422) notifies nobody.
"""

from __future__ import annotations

import logging
from typing import Any

from master.edge.relay.relay import Relay
from master.services.config_scopes import CAPABILITIES, LIMITS, ConfigScopes
from master.storage.db import Database
from rawp.clock import Clock
from rawp.frames import dump_frame, make_frame

log = logging.getLogger("rawp.master.edge.notify")


def config_changed_frame(
    node_id: str, scope: str, version: int, reason: str | None, clock: Clock
) -> str:
    payload: dict[str, Any] = {
        "node_id": node_id,
        "changed_scope": scope,
        "config_version": version,
    }
    if reason:
        payload["reason"] = reason
    return dump_frame(make_frame("node.config.changed", payload, clock=clock))


class NotifyingConfigScopes(ConfigScopes):
    def __init__(self, db: Database, clock: Clock, relay: Relay) -> None:
        super().__init__(db, clock)
        self._relay = relay
        self._notify_clock = clock

    async def update_limits(self, node_id: str, body: dict[str, Any]) -> dict[str, Any]:
        answer = await super().update_limits(node_id, body)
        await self._notify(node_id, LIMITS, answer["config_version"], body.get("reason"))
        return answer

    async def update_capabilities(self, node_id: str, body: dict[str, Any]) -> dict[str, Any]:
        answer = await super().update_capabilities(node_id, body)
        await self._notify(node_id, CAPABILITIES, answer["config_version"], body.get("reason"))
        return answer

    async def update_legacy(self, node_id: str, body: dict[str, Any]) -> dict[str, Any]:
        # The legacy endpoint replaces both scopes at version 1 and carries no reason.
        answer = await super().update_legacy(node_id, body)
        for scope in (LIMITS, CAPABILITIES):
            await self._notify(node_id, scope, 1, "legacy POST /v1/nodes/config")
        return answer

    async def _notify(self, node_id: str, scope: str, version: int, reason: Any) -> None:
        text = config_changed_frame(
            node_id,
            scope,
            version,
            reason if isinstance(reason, str) else None,
            self._notify_clock,
        )
        try:
            sent = await self._relay.publish_node(node_id, text)
        except Exception:  # the update is stored; a lost notice must not fail the client's call
            log.exception("node %s: could not push the %s config change", node_id, scope)
            return
        log.info(
            "node %s: %s config v%d pushed (%d edge sockets or replicas)",
            node_id,
            scope,
            version,
            sent,
        )
