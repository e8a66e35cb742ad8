"""What the relay keeps of each session's frames for edges that reconnect, bounded by bytes
(issue 35 §2; relay rule 4).

Before, a session kept its last 2,048 frames whatever their size, so the master's memory grew
with what it had relayed: about 0.8 KB a frame, 1.6 GB for 1,000 sessions that had each
relayed 2,048. Now memory is bounded by configuration:

1. Each session keeps at most `frames` frames and `session_bytes` bytes; the oldest go first.
2. All sessions together keep at most `total_bytes`; when a frame takes the total past it, the
   oldest frames of the whole master go first, whichever session they belong to — a session
   that went quiet long ago gives up its history before a live one does.
3. A frame's cost is its text's length plus `FRAME_COST`, the memory Python spends to keep it
   (the string's header, its message_id, its slots in the ring's deques and in the master-wide
   order), so the budget is close to what the process really holds.
4. A frame that goes is counted in its ring's `evicted`. The relay does not know where an
   evicted frame stood against a cursor it no longer holds; the client does (its buffer counts
   exactly, client.sessions.buffer rule 6) and is asked first. When it cannot be asked, the
   reconnecting edge is told `dropped` = the frames this ring let go (never 0 when any went), so
   a gap is never silent (dps-profile §8: `dropped > 0` tells the edge a gap exists).
5. A kept frame leaves no object the collector tracks: its message_id, text and order sit in
   three deques of its ring, its ring number and order in two deques of the master-wide order
   — strings and integers in long-lived containers, no tuple a frame. Tuples of strings were
   untracked at their first collection, but that first collection had to walk them: a tuple
   reused from CPython's free list does not count towards the young generation's threshold,
   so at 10,000 sessions relaying a frame a second ~90,000 of them piled up between young
   collections, and the one that came walked them all in 50–100 ms, every ~5 s (issue 35,
   measured with a gc callback in the master). Before that, a (ring, order) tuple per frame
   kept ~200,000 tracked objects in the old generation, walked by every full collection.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Iterator

# Rule 3, measured with tracemalloc over 100,000 kept 300-byte delta frames when each frame
# was a tuple: 171 B of tuples, deque slots and the order number, 49 B of the text's string
# header, 85 B of its message_id. Without the tuples it is less; the bound stays on the safe
# side of what is held.
FRAME_COST = 304
SESSION_BYTES = 256 * 1024
# The master's RSS grows by about twice what is kept (the allocator's share of frames kept and
# let go; bench/scale.py --frame-bytes): 32 MiB keeps 1,000 sessions under 300 MB and 10,000
# under 1 GB after each relayed more than its own budget (issue 35). Older frames come from
# the client's buffer, which is asked first (rule 4).
TOTAL_BYTES = 32 * 1024 * 1024


_ring_numbers = itertools.count(1)


class Ring:
    """One session's kept frames, oldest first; iterated as (message_id, text, order)."""

    __slots__ = ("bytes", "evicted", "ids", "number", "orders", "texts")

    def __init__(self) -> None:
        # Three deques, not a deque of tuples (rule 5): the i-th of each is the i-th frame.
        self.ids: deque[str] = deque()
        self.texts: deque[str] = deque()
        self.orders: deque[int] = deque()
        self.bytes = 0
        self.evicted = 0
        self.number = next(_ring_numbers)  # how the master-wide order names it (rule 5)

    def __iter__(self) -> Iterator[tuple[str, str, int]]:
        return zip(self.ids, self.texts, self.orders, strict=True)

    def __len__(self) -> int:
        return len(self.texts)

    def clear(self) -> None:
        self.ids.clear()
        self.texts.clear()
        self.orders.clear()


class ReplayBudget:
    def __init__(
        self,
        frames: int = 2048,
        session_bytes: int = SESSION_BYTES,
        total_bytes: int = TOTAL_BYTES,
    ) -> None:
        self.frames = frames
        self.session_bytes = session_bytes
        self.total_bytes = total_bytes
        self.bytes = 0  # kept by every ring together
        # Every kept frame's ring number and order, in publish order, for rule 2 (two deques,
        # rule 5); entries of frames that went by rule 1 stay until they reach the front or the
        # order is compacted.
        self._order_rings: deque[int] = deque()
        self._order_at: deque[int] = deque()
        self._rings: dict[int, Ring] = {}  # the rings with frames kept, by number (rule 5)
        self._kept = 0  # frames kept by every ring together

    def keep(self, ring: Ring, message_id: str, text: str, order: int) -> None:
        ring.ids.append(message_id)
        ring.texts.append(text)
        ring.orders.append(order)
        cost = len(text) + FRAME_COST
        ring.bytes += cost
        self.bytes += cost
        self._kept += 1
        self._rings[ring.number] = ring
        self._order_rings.append(ring.number)
        self._order_at.append(order)
        while len(ring.texts) > self.frames or ring.bytes > self.session_bytes:
            self._evict_oldest(ring)  # rule 1
        while self.bytes > self.total_bytes and self._order_rings:
            number, at = self._order_rings.popleft(), self._order_at.popleft()  # rule 2
            owner = self._rings.get(number)  # the ring of the master's oldest frame
            if owner is not None and owner.orders and owner.orders[0] == at:
                self._evict_oldest(owner)
        if len(self._order_rings) > 2 * self._kept + 1024:
            self._compact()

    def forget(self, ring: Ring) -> None:
        """The session ended: its frames stop counting."""
        self._rings.pop(ring.number, None)
        self.bytes -= ring.bytes
        self._kept -= len(ring)
        ring.clear()
        ring.bytes = 0

    def _evict_oldest(self, ring: Ring) -> None:
        ring.ids.popleft()
        ring.orders.popleft()
        cost = len(ring.texts.popleft()) + FRAME_COST
        ring.bytes -= cost
        self.bytes -= cost
        self._kept -= 1
        ring.evicted += 1
        if not ring.texts:
            self._rings.pop(ring.number, None)  # kept again by its next frame

    def _compact(self) -> None:
        """Drop the order's entries of frames no longer kept (rule 1 took them, or their
        session ended), so the order stays proportional to what is kept."""
        rings = self._rings
        kept = [
            (number, at)
            for number, at in zip(self._order_rings, self._order_at, strict=True)
            if (ring := rings.get(number)) is not None and ring.orders and at >= ring.orders[0]
        ]
        self._order_rings = deque(number for number, _ in kept)
        self._order_at = deque(at for _, at in kept)
