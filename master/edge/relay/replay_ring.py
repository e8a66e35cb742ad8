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
   (the string's header, the tuple, its slot in the deque and in the master-wide order), so the
   budget is close to what the process really holds.
4. A frame that goes is counted in its ring's `evicted`. The relay does not know where an
   evicted frame stood against a cursor it no longer holds; the client does (its buffer counts
   exactly, client.sessions.buffer rule 6) and is asked first. When it cannot be asked, the
   reconnecting edge is told `dropped` = the frames this ring let go (never 0 when any went), so
   a gap is never silent (dps-profile §8: `dropped > 0` tells the edge a gap exists).
5. What a kept frame leaves behind holds only strings and integers — (message_id, text,
   order) in its ring, (ring number, order) in the master-wide order — never a reference to
   an object: the collector stops tracking such tuples at their first collection, so a
   million kept frames add nothing to the full collections that pause the relay (at 10,000
   sessions a (ring, order) tuple per frame kept ~200,000 tracked objects in the old
   generation, walked by every full collection).
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Iterator

# Rule 3, measured with tracemalloc over 100,000 kept 300-byte delta frames: 171 B of tuples,
# deque slots and the order number, 49 B of the text's string header, 85 B of its message_id.
FRAME_COST = 304
SESSION_BYTES = 256 * 1024
# The master's RSS grows by about twice what is kept (the allocator's share of frames kept and
# let go; bench/scale.py --frame-bytes): 32 MiB keeps 1,000 sessions under 300 MB and 10,000
# under 1 GB after each relayed more than its own budget (issue 35). Older frames come from
# the client's buffer, which is asked first (rule 4).
TOTAL_BYTES = 32 * 1024 * 1024


_ring_numbers = itertools.count(1)


class Ring:
    """One session's kept frames: (message_id, text, order), oldest first."""

    __slots__ = ("bytes", "evicted", "frames", "number")

    def __init__(self) -> None:
        self.frames: deque[tuple[str, str, int]] = deque()
        self.bytes = 0
        self.evicted = 0
        self.number = next(_ring_numbers)  # how the master-wide order names it (rule 5)

    def __iter__(self) -> Iterator[tuple[str, str, int]]:
        return iter(self.frames)

    def __len__(self) -> int:
        return len(self.frames)


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
        # Every kept frame's (ring number, order) in publish order, for rule 2; entries of
        # frames that went by rule 1 stay until they reach the front or the order is compacted.
        self._order: deque[tuple[int, int]] = deque()
        self._rings: dict[int, Ring] = {}  # the rings with frames kept, by number (rule 5)
        self._kept = 0  # frames kept by every ring together

    def keep(self, ring: Ring, message_id: str, text: str, order: int) -> None:
        ring.frames.append((message_id, text, order))
        cost = len(text) + FRAME_COST
        ring.bytes += cost
        self.bytes += cost
        self._kept += 1
        self._rings[ring.number] = ring
        self._order.append((ring.number, order))
        while len(ring.frames) > self.frames or ring.bytes > self.session_bytes:
            self._evict_oldest(ring)  # rule 1
        while self.bytes > self.total_bytes and self._order:
            number, at = self._order.popleft()  # rule 2: the master's oldest frame
            owner = self._rings.get(number)
            if owner is not None and owner.frames and owner.frames[0][2] == at:
                self._evict_oldest(owner)
        if len(self._order) > 2 * self._kept + 1024:
            self._compact()

    def forget(self, ring: Ring) -> None:
        """The session ended: its frames stop counting."""
        self._rings.pop(ring.number, None)
        self.bytes -= ring.bytes
        self._kept -= len(ring.frames)
        ring.frames.clear()
        ring.bytes = 0

    def _evict_oldest(self, ring: Ring) -> None:
        _, text, _ = ring.frames.popleft()
        cost = len(text) + FRAME_COST
        ring.bytes -= cost
        self.bytes -= cost
        self._kept -= 1
        ring.evicted += 1
        if not ring.frames:
            self._rings.pop(ring.number, None)  # kept again by its next frame

    def _compact(self) -> None:
        """Drop the order's entries of frames no longer kept (rule 1 took them, or their
        session ended), so the order stays proportional to what is kept."""
        rings = self._rings
        self._order = deque(
            (number, at)
            for number, at in self._order
            if (ring := rings.get(number)) is not None and ring.frames and at >= ring.frames[0][2]
        )
