"""The frames waiting for one attached socket (client.sessions.session rules 1, 2 and 5).

The session puts every frame it emits here while a socket is attached; the socket's sender
(client.sessions.stream) takes them in batches. A deque and one waiter rather than an
`asyncio.Queue`: `put` is on every relayed frame's path, and the queue's own bookkeeping
(unfinished tasks, waiting putters, a loop lookup) cost about a tenth of the client's work on a
frame (issue 35). Only one sender ever waits on an outbox.

It is bounded by bytes, not by count: `pending_bytes` is what is queued and not yet taken by
a write, and the session lets the socket go when that passes twice `max_buffer_size`
(session rule 5), so memory stays bounded whatever the frame sizes (X-SEC-03).
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

from client.sessions.buffer import BufferedFrame

CLOSE = object()  # outbox sentinel: close the socket


def item_size(item: Any) -> int:
    """The UTF-8 bytes of a queued item: a buffered frame, a greeting's text, or CLOSE (0)."""
    if isinstance(item, BufferedFrame):
        return item.size
    return len(item.encode()) if isinstance(item, str) else 0


class Outbox:
    """The frames waiting for one attached socket, and how many bytes they hold."""

    def __init__(self) -> None:
        self.items: deque[Any] = deque()
        self.pending_bytes = 0
        # Set when the socket stopped draining: the socket is let go (session rule 5).
        self.abandoned = asyncio.Event()
        self.end_session = False  # letting it go ended the session (reattach_window 0)
        self._waiter: asyncio.Future[None] | None = None

    def put(self, item: Any) -> None:
        self.pending_bytes += item_size(item)
        self.items.append(item)
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    def sent(self, items: list[Any]) -> None:
        """These items were written: they no longer count as pending."""
        self.pending_bytes -= sum(map(item_size, items))

    async def take(self, max_bytes: int) -> tuple[list[Any], bool]:
        """Wait for at least one item, then take every queued item up to `max_bytes` (one
        more past it) or up to CLOSE: (the items, whether CLOSE came after them)."""
        items = self.items
        while not items:
            self._waiter = waiter = asyncio.get_running_loop().create_future()
            try:
                await waiter
            finally:
                if self._waiter is waiter:
                    self._waiter = None
        batch: list[Any] = []
        size = 0
        while items and size < max_bytes:
            item = items.popleft()
            if item is CLOSE:
                return batch, True
            batch.append(item)
            size += item_size(item)
        return batch, False
