"""What the master holds in memory for one session it relays (RAWP §9.4)."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from rawp.config import Limits


@dataclass
class LiveSession:
    id: str
    node_id: str
    user_id: str
    agent_name: str
    limits: Limits  # pinned at init (§4.1.8): frame size and reattach window come from here
    dedupe_window: int = 4096
    link: Any = None  # master.edge.client_link.ClientLink
    last_activity: float = 0.0  # clock.monotonic() of the last frame either way
    activity_written: float = float("-inf")
    unregister: Any = None  # forgets the NodeSockets closer
    _controls: OrderedDict = field(default_factory=OrderedDict)

    def claim_control(self, message_id: str) -> bool:
        """E-WS-11: True the first time a control `message_id` is seen in this session."""
        if message_id in self._controls:
            return False
        self._controls[message_id] = None
        while len(self._controls) > self.dedupe_window:
            self._controls.popitem(last=False)  # bounded memory: the oldest ids go first
        return True

    def release_control(self, message_id: str) -> None:
        """A control frame that could not be delivered may be sent again with the same id."""
        self._controls.pop(message_id, None)
