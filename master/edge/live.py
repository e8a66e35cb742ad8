"""What the master holds in memory for one session it relays (RAWP §9.4)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rawp.config import Limits


@dataclass
class RelayedSession:
    id: str
    node_id: str
    user_id: str
    agent_name: str
    limits: Limits  # pinned at init (§4.1.8): frame size and reattach window come from here
    link: Any = None  # master.edge.links.client_link.ClientLink
    last_activity: float = 0.0  # clock.monotonic() of the last frame either way
    activity_written: float = float("-inf")
    unregister: Any = None  # forgets the NodeSockets closer
