"""Files the agent sends (`agent.file`, DPS §4), posted into the session's conversation.

The renderer hands every `agent.file` frame to a session's `FileUploads`. Rules:

1. The pieces are put together by `gateway.rendering.file_assembly` (bounded per session); a
   finished file becomes an `Upload` operation, which the renderer's driver performs once through
   its `Poster` (keyed by the frame that finished it, so a gateway restart that replays the frames
   does not upload it twice).
2. A file larger than the platform allows (`PlatformLimits.max_upload_bytes`) is known from
   its first piece (`size_bytes` is the whole file's size): nothing is held, and one line says
   so instead. A platform that takes no files at all (the console) gets one line naming it.
3. A file that fails to come together (gateway.rendering.file_assembly rule 3), or whose last piece
   never came before its turn ended, gets one line saying why. Never a crash, never silence.
4. The name shown and uploaded is the agent's name cut to its last path component, without
   control characters or backticks, at most 100 characters: an agent cannot name a path on
   the platform's side or break the line's formatting.
5. Images in tool results are not uploaded: the DPS profile has no image output type for
   `tool.invoke.result` (dps-profile §4), so an agent that wants a picture shown sends it as
   an `agent.file` (docs/gateway.md).

6. An empty file is not uploaded (Slack refuses a length of 0): one line says it was empty.
7. An upload the platform refuses (an error other than a rate limit, which the adapter waits
   out) becomes one line saying so; the session goes on.

Every line goes through the renderer's text path (keyed posts, redaction, chunking). This module
does no I/O: it is part of the renderer's pure core (gateway.rendering.render_core).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from gateway.platform import PlatformLimits, no_uploads_line, size_text
from gateway.rendering.file_assembly import DEFAULT_MAX_HELD_BYTES, AssembledFile, FileAssembler
from gateway.rendering.operations import Operation, Upload
from rawp import events as ev

TextOps = Callable[[str], list[Operation]]  # a line through the text path (RenderCore.text)
MAX_NAME = 100
_UNSAFE = re.compile(r"[\x00-\x1f\x7f`]")


def safe_name(name: str) -> str:
    """Rule 4."""
    last = re.split(r"[\\/]", name)[-1]
    cleaned = _UNSAFE.sub("", last).strip().lstrip(".") or "file"
    if len(cleaned) <= MAX_NAME:
        return cleaned
    stem, dot, suffix = cleaned.rpartition(".")
    if dot and 0 < len(suffix) <= 10:
        return stem[: MAX_NAME - len(suffix) - 1] + "." + suffix
    return cleaned[:MAX_NAME]


def too_large_line(platform: str, name: str, size: int, limit: int) -> str:
    return (
        f"📎 {name} ({size_text(size)}) is larger than {platform.capitalize()} allows "
        f"({size_text(limit)}), so it was not uploaded."
    )


def problem_line(name: str, reason: str) -> str:
    return f"📎 {name} was not posted: {reason}."


class FileUploads:
    """One session's files in transit (see the module docstring); no I/O: it returns the
    operations its frames make (gateway.rendering.operations)."""

    def __init__(
        self,
        platform_name: str,
        limits: PlatformLimits,
        text_ops: TextOps,
        max_held_bytes: int = DEFAULT_MAX_HELD_BYTES,
    ) -> None:
        self.platform_name = platform_name
        self.limits = limits
        self._text_ops = text_ops
        self.assembler = FileAssembler(max_held_bytes)

    @property
    def pending(self) -> bool:
        """A file is unfinished: the renderer is not settled.

        See gateway.rendering.render, crash safety."""
        return self.assembler.pending

    def on_chunk(self, chunk: ev.AgentFile) -> list[Operation]:
        name = safe_name(chunk.name)
        limit = self.limits.max_upload_bytes
        if self.assembler.is_new(chunk.file_id) and (limit == 0 or chunk.size_bytes > limit):
            self.assembler.refuse(chunk)  # rule 2: nothing held for a file that cannot go
            if limit == 0:
                return self._text_ops(no_uploads_line(self.platform_name, name, chunk.size_bytes))
            return self._text_ops(too_large_line(self.platform_name, name, chunk.size_bytes, limit))
        outcome = self.assembler.add(chunk)
        if isinstance(outcome, AssembledFile):
            return self._upload(outcome)
        if outcome is not None:
            return self._text_ops(problem_line(safe_name(outcome.name), outcome.reason))
        return []

    def _upload(self, file: AssembledFile) -> list[Operation]:
        name = safe_name(file.name)
        if not file.data:  # Slack refuses a length of 0; an empty attachment says nothing
            return self._text_ops(problem_line(name, "it is empty"))
        # Rule 7: a refusal (a 413, a missing scope) is said, and the session goes on.
        refused = problem_line(name, f"{self.platform_name} refused the upload")
        return [Upload(name, file.mime_type, file.data, refused)]

    def turn_ended(self) -> list[Operation]:
        """Rule 3: files whose last piece never came."""
        ops: list[Operation] = []
        for problem in self.assembler.abandon():
            ops += self._text_ops(problem_line(safe_name(problem.name), problem.reason))
        return ops
