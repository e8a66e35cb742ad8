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
   with no id, or an id whose place is not known, it returns every unsent frame (the master's
   cursor is before anything we still hold).
5. Every frame the session emits gets the next sequence number, kept or not. The place of a
   frame that is no longer held (evicted, or discarded by DROP) and of a greeting frame (not
   buffered: it sits between two frames) is remembered by `message_id` for the last
   `REMEMBERED` such ids, so a cursor that points at one of them still says exactly where
   the stream resumes and how many frames in between are gone (issue 14 §1).
6. `after(last_message_id)` is what an edge that reconnects is owed (the master asks, over
   `GET /v1/session/{id}/frames`, when it no longer holds the frames itself): every held frame
   after the cursor, sent or not, and `dropped` = the frames after the cursor that are gone,
   exact whenever the cursor's place is known.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Literal

REMEMBERED = 16_384  # places of frames no longer held, and of greeting frames (rule 5)


@dataclass(slots=True)
class BufferedFrame:
    message_id: str
    text: str
    size: int
    seq: int = 0
    sent: bool = False


@dataclass(slots=True)
class Resume:
    """What follows a cursor (rule 6): `found` is False when its place is not known."""

    found: bool
    frames: list[BufferedFrame]
    dropped: int


class FrameBuffer:
    def __init__(self, max_bytes: int, policy: Literal["RING", "DROP"]) -> None:
        self.max_bytes = max_bytes
        self.policy = policy
        self.frames: deque[BufferedFrame] = deque()
        self.bytes = 0
        self.dropped = 0  # unsent frames lost since the last attach (rule 3)
        self.dropping = False
        self.last_seq = 0  # rule 5: the sequence number of the newest frame emitted
        # (message_id, place) of the last REMEMBERED frames no longer held (rule 5). A bounded
        # deque, not a dict: a full buffer evicts a frame for every frame added, and only an
        # attach ever looks a place up (issue 35).
        self._places: deque[tuple[str, int]] = deque(maxlen=REMEMBERED)

    def add(
        self, message_id: str, text: str, *, size: int | None = None, live: bool = False
    ) -> BufferedFrame | None:
        """Keep one frame; None when DROP discarded it. `size` is its length in UTF-8 bytes,
        when the caller knows it already (it serialized the frame to bytes).

        `live` means a socket is attached and will send the frame anyway: room is made by
        evicting the oldest frames whatever the policy, and nothing counts as dropped, because
        the buffer only has to hold what a reattach may need.
        """
        if size is None:
            size = len(text.encode())
        seq = self.last_seq = self.last_seq + 1
        if (self.dropping or self.bytes + size > self.max_bytes) and not self._room(
            message_id, size, live
        ):
            return None
        entry = BufferedFrame(message_id, text, size, seq)
        self.frames.append(entry)
        self.bytes += size
        return entry

    def _room(self, message_id: str, size: int, live: bool) -> bool:
        """Make room for a frame of `size` bytes (rules 2 and 3); False when it is not kept."""
        frames = self.frames
        while frames and frames[0].sent and self.bytes + size > self.max_bytes:
            self._pop_oldest()
        # Once DROP discards, it discards until the next attach: the edge sees one gap at the
        # end, never a hole in the middle of what it is given.
        full = self.dropping or self.bytes + size > self.max_bytes
        if self.policy == "DROP" and not live and full:
            self.dropping = True
            self.dropped += 1
            self._places.append((message_id, self.last_seq))
            return False
        while self.bytes + size > self.max_bytes and frames:
            oldest = self._pop_oldest()
            self.dropped += 0 if oldest.sent or live else 1
        if size > self.max_bytes:  # cannot happen with max_frame_size <= max_buffer_size
            self.dropped += 0 if live else 1
            self._places.append((message_id, self.last_seq))
            return False
        return True

    def _pop_oldest(self) -> BufferedFrame:
        oldest = self.frames.popleft()
        self.bytes -= oldest.size
        self._places.append((oldest.message_id, oldest.seq))
        return oldest

    def mark_between(self, message_id: str) -> None:
        """A frame sent outside the buffer (a greeting) sits after the newest frame (rule 5)."""
        self._places.append((message_id, self.last_seq))

    def place(self, message_id: str) -> int | None:
        """Rule 5: the sequence number a cursor stands at; None when it is not known."""
        for entry in reversed(self.frames):  # a live cursor is usually near the end
            if entry.message_id == message_id:
                return entry.seq
        for remembered, place in reversed(self._places):  # only on an attach: a scan will do
            if remembered == message_id:
                return place
        return None

    def replay_after(self, last_message_id: str | None) -> list[BufferedFrame]:
        place = self.place(last_message_id) if last_message_id is not None else None
        if place is not None:
            return [entry for entry in self.frames if entry.seq > place]
        return [entry for entry in self.frames if not entry.sent]

    def after(self, last_message_id: str) -> Resume:
        """Rule 6: every held frame after the cursor, and how many after it are gone."""
        place = self.place(last_message_id)
        if place is None:
            return Resume(False, list(self.frames), 0)
        frames = [entry for entry in self.frames if entry.seq > place]
        return Resume(True, frames, max(0, self.last_seq - place - len(frames)))

    def take_dropped(self) -> int:
        dropped, self.dropped = self.dropped, 0
        self.dropping = False
        return dropped

    def clear(self) -> None:
        self.frames.clear()
        self._places.clear()
        self.bytes = 0
