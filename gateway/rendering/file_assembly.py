"""Putting a file the agent sends back together from its `agent.file` frames (DPS §4).

An agent sends a file as frames of one `file_id`, each with a base64 `data` piece, its
`chunk_index` (0, 1, …) and `final` on the last one, because one frame must stay below the
session's `max_frame_size` (dps-profile §3). `FileAssembler` holds one session's pieces; it does
no I/O, so any chunking and any order can be fed to it in a test. Rules:

1. A file is complete when its `final` piece and every index below it have arrived, in any
   order; its bytes are the pieces joined by index. `size_bytes` is the whole file's size
   (docs/protocol.md, Decisions): the joined bytes must have exactly that length.
2. Bounded: the bytes held for all of the session's unfinished files never pass
   `max_held_bytes`, and at most `max_files` files are unfinished at once. A file announced
   larger than the cap is refused at its first piece, before anything is held.
3. Whatever goes wrong ends that file with a `FileProblem` saying why, in words a chat user
   can read, and frees its bytes: a piece that is not base64, a piece that arrived twice with
   different bytes, a piece after the final one, the wrong total size, too many bytes or
   files. Nothing raises.
4. A file that ended (assembled, refused or failed) is remembered (a bounded window), so its
   stray or repeated pieces are ignored rather than starting it again.
5. `abandon` ends every unfinished file (the turn ended: its last pieces never came).
"""

from __future__ import annotations

import base64
import binascii
from collections import OrderedDict
from dataclasses import dataclass, field

from rawp.events import AgentFile

DEFAULT_MAX_HELD_BYTES = 32 * 1024 * 1024
DEFAULT_MAX_FILES = 16
_ENDED_MEMORY = 1024
_TOO_MUCH = "it is larger than what the gateway holds for one session"


@dataclass(frozen=True, slots=True)
class AssembledFile:
    file_id: str
    name: str
    mime_type: str
    data: bytes


@dataclass(frozen=True, slots=True)
class FileProblem:
    """A file that will not be posted, and why: a clause ("its last part never came")."""

    file_id: str
    name: str
    size_bytes: int
    reason: str


@dataclass
class _Pending:
    name: str
    mime_type: str
    size_bytes: int
    pieces: dict[int, bytes] = field(default_factory=dict)
    final_index: int | None = None
    held: int = 0  # bytes in `pieces`


class FileAssembler:
    def __init__(
        self, max_held_bytes: int = DEFAULT_MAX_HELD_BYTES, max_files: int = DEFAULT_MAX_FILES
    ) -> None:
        self.max_held_bytes = max_held_bytes
        self.max_files = max_files
        self._pending: dict[str, _Pending] = {}
        self._ended: OrderedDict[str, None] = OrderedDict()
        self._held = 0

    @property
    def pending(self) -> bool:
        """Some file is unfinished: pieces are held that a later frame completes."""
        return bool(self._pending)

    @property
    def held_bytes(self) -> int:
        return self._held

    def is_new(self, file_id: str) -> bool:
        """No piece of `file_id` was seen yet (and it did not end)."""
        return file_id not in self._pending and file_id not in self._ended

    def refuse(self, chunk: AgentFile) -> None:
        """End `chunk`'s file without holding it (the caller said why): rule 4 then ignores
        the rest of its pieces."""
        self._end(chunk.file_id)

    def add(self, chunk: AgentFile) -> AssembledFile | FileProblem | None:
        """Take one piece; the file once complete, a problem once it failed, else None."""
        if chunk.file_id in self._ended:
            return None  # rule 4
        pending = self._pending.get(chunk.file_id)
        if pending is None:
            if chunk.size_bytes > self.max_held_bytes:
                return self._fail(chunk, None, _TOO_MUCH)
            if len(self._pending) >= self.max_files:
                return self._fail(
                    chunk, None, f"it came while {self.max_files} other files were unfinished"
                )
            pending = _Pending(chunk.name, chunk.mime_type, chunk.size_bytes)
            self._pending[chunk.file_id] = pending
        try:
            piece = base64.b64decode(chunk.data, validate=True)
        except (binascii.Error, ValueError):
            return self._fail(chunk, pending, f"its part {chunk.chunk_index} is not valid base64")
        known = pending.pieces.get(chunk.chunk_index)
        if known is not None:
            if known == piece:
                return None  # the same piece again: a repeat, harmless
            return self._fail(chunk, pending, f"its part {chunk.chunk_index} came twice, different")
        if chunk.final:
            if pending.final_index not in (None, chunk.chunk_index):
                return self._fail(chunk, pending, "it has two different last parts")
            pending.final_index = chunk.chunk_index
        last_seen = max([chunk.chunk_index, *pending.pieces])
        if pending.final_index is not None and last_seen > pending.final_index:
            return self._fail(chunk, pending, "a part came after its last part")
        if self._held + len(piece) > self.max_held_bytes:
            return self._fail(chunk, pending, _TOO_MUCH)
        if pending.held + len(piece) > pending.size_bytes:
            announced = f"it is larger than the {pending.size_bytes} bytes it announced"
            return self._fail(chunk, pending, announced)
        pending.pieces[chunk.chunk_index] = piece
        pending.held += len(piece)
        self._held += len(piece)
        if pending.final_index is None or len(pending.pieces) <= pending.final_index:
            return None
        data = b"".join(pending.pieces[i] for i in range(pending.final_index + 1))
        self._drop(chunk.file_id)
        if len(data) != pending.size_bytes:
            problem = f"it arrived with {len(data)} of the {pending.size_bytes} bytes it announced"
            return FileProblem(chunk.file_id, pending.name, pending.size_bytes, problem)
        return AssembledFile(chunk.file_id, pending.name, pending.mime_type, data)

    def abandon(self) -> list[FileProblem]:
        """End every unfinished file (rule 5)."""
        problems = []
        for file_id, pending in list(self._pending.items()):
            problems.append(
                FileProblem(file_id, pending.name, pending.size_bytes, "its last part never came")
            )
            self._drop(file_id)
        return problems

    def _fail(self, chunk: AgentFile, pending: _Pending | None, reason: str) -> FileProblem:
        name = pending.name if pending else chunk.name
        size = pending.size_bytes if pending else chunk.size_bytes
        self._drop(chunk.file_id)  # frees what was held; ends a file never held all the same
        return FileProblem(chunk.file_id, name, size, reason)

    def _drop(self, file_id: str) -> None:
        pending = self._pending.pop(file_id, None)
        if pending is not None:
            self._held -= pending.held
        self._end(file_id)

    def _end(self, file_id: str) -> None:
        self._ended[file_id] = None
        self._ended.move_to_end(file_id)
        if len(self._ended) > _ENDED_MEMORY:
            self._ended.popitem(last=False)
