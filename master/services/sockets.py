"""Open sockets per node, so that unregistering a node can close them all at once (§3.5).

The relay registers a closer for every WebSocket it holds for a node — the data-plane socket to
the client and the edge sockets of that node's sessions — and unregisters it when the socket
ends. `close_node` runs every closer of the node (M-UNREG-02) and, with several master
replicas, tells the others (`tell_others`, set to the relay's `node_closed`), which run theirs
with `close_local`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger("rawp.master.sockets")

Closer = Callable[[], Awaitable[None]]


class NodeSockets:
    def __init__(self) -> None:
        self._closers: dict[str, dict[int, Closer]] = {}
        self._next = 0
        self.tell_others: Callable[[str], Awaitable[None]] | None = None

    def register(self, node_id: str, closer: Closer) -> Callable[[], None]:
        """Remember `closer`; the returned function forgets it (call it when the socket ends)."""
        self._next += 1
        handle = self._next
        self._closers.setdefault(node_id, {})[handle] = closer

        def unregister() -> None:
            closers = self._closers.get(node_id)
            if closers is not None:
                closers.pop(handle, None)
                if not closers:
                    del self._closers[node_id]

        return unregister

    def count(self, node_id: str) -> int:
        return len(self._closers.get(node_id, {}))

    async def close_node(self, node_id: str) -> int:
        """Close every socket of the node here and on every other replica."""
        closed = await self.close_local(node_id)
        if self.tell_others is not None:
            try:
                await self.tell_others(node_id)
            except Exception:  # the node's tokens are dead already; its sockets end with them
                log.exception("could not tell the other replicas that node %s is gone", node_id)
        return closed

    async def close_local(self, node_id: str) -> int:
        """Close every socket of the node held by this process; one failing closer does not
        spare the others."""
        closers = self._closers.pop(node_id, {})
        for closer in closers.values():
            try:
                await closer()
            except Exception:
                log.exception("closing a socket of node %s failed", node_id)
        return len(closers)
