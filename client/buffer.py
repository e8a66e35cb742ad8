"""The per-session frame buffer behind detach and replay (RAWP §5.1, §7.2, dps-profile §8).

Rules:

1. Every frame a session emits is kept here as its serialized text, sent or not, so that a
   reattach can replay what the master missed even when the socket died with frames in flight.
2. The bytes kept never exceed the pinned `max_buffer_size` (X-SEC-03). Frames already written
   to a socket are the first to go when room is needed; they are history, not a loss.
3. While detached, when unsent frames must go: `RING` evicts the oldest, `DROP` discards the
   new frame and every later one until the next attach (one gap, at the end). Each unsent
   frame lost is counted in `dropped` until the next attach reads and resets it. While a
   socket is attached the frame is sent anyway, so room is made by evicting the oldest.
4. `replay_after(last_message_id)` returns the frames after that id in their original order;
   with no id, or an id no longer held, it returns every unsent frame (the master's cursor
   is before anything we still hold).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Literal


@dataclass(slots=True)
class BufferedFrame:
    message_id: str
    text: str
    size: int
    sent: bool = False


class FrameBuffer:
    def __init__(self, max_bytes: int, policy: Literal["RING", "DROP"]) -> None:
        self.max_bytes = max_bytes
        self.policy = policy
        self.frames: deque[BufferedFrame] = deque()
        self.bytes = 0
        self.dropped = 0  # unsent frames lost since the last attach (rule 3)
        self.dropping = False

    def add(self, message_id: str, text: str, *, live: bool = False) -> BufferedFrame | None:
        """Keep one frame; None when DROP discarded it.

        `live` means a socket is attached and will send the frame anyway: room is made by
        evicting the oldest frames whatever the policy, and nothing counts as dropped, because
        the buffer only has to hold what a reattach may need.
        """
        size = len(text.encode())
        self._evict_sent(size)
        # Once DROP discards, it discards until the next attach: the edge sees one gap at the
        # end, never a hole in the middle of what it is given.
        full = self.dropping or self.bytes + size > self.max_bytes
        if self.policy == "DROP" and not live and full:
            self.dropping = True
            self.dropped += 1
            return None
        while self.bytes + size > self.max_bytes and self.frames:
            oldest = self.frames.popleft()
            self.bytes -= oldest.size
            self.dropped += 0 if oldest.sent or live else 1
        if size > self.max_bytes:  # cannot happen with max_frame_size <= max_buffer_size
            self.dropped += 0 if live else 1
            return None
        entry = BufferedFrame(message_id, text, size)
        self.frames.append(entry)
        self.bytes += size
        return entry

    def _evict_sent(self, needed: int) -> None:
        while self.frames and self.frames[0].sent and self.bytes + needed > self.max_bytes:
            self.bytes -= self.frames.popleft().size

    def replay_after(self, last_message_id: str | None) -> list[BufferedFrame]:
        if last_message_id is not None:
            ids = [entry.message_id for entry in self.frames]
            if last_message_id in ids:
                return list(self.frames)[ids.index(last_message_id) + 1 :]
        return [entry for entry in self.frames if not entry.sent]

    def take_dropped(self) -> int:
        dropped, self.dropped = self.dropped, 0
        self.dropping = False
        return dropped

    def clear(self) -> None:
        self.frames.clear()
        self.bytes = 0
