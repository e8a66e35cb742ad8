"""The turn's progress message, as the pure core sees it (issue 30 §4).

One message per turn holds the turn's plan and task list, the tool running now ("🔧 Running:
Bash (npm test)") and the context in use ("🧠 context 62%"), edited in place (G-TASK-06;
gateway.rendering.render rule 5). `ProgressMessage` is part of the pure core
(gateway.rendering.render_core): it remembers the lists, the message they were posted as and
the context the agent last reported, and returns the operations that show a change. Rules:

1. Nothing is posted until the turn has a list (a task list or plan): a turn without one shows
   its running tool on the status line and, after 30 s, in the interim status message.
2. The first list posts the message (`Post(keep="progress")`); every later change of a list, of
   the running tool or of the context edits it (`Edit(coalesce=True)`, timed by the driver's
   `ProgressEdits`, gateway.rendering.status_line). A text equal to the last one asked is not
   asked again.
3. At turn end it is edited once more (`Edit`, not coalesced) to the final state: the lists and
   the context, no running tool. This edit is asked even when the text is the last one asked
   (the driver may still hold that one); the driver skips it if the message already reads it.
4. A platform that cannot edit gets the lists alone, posted again when a list changes (so a tool
   does not repost it); a text too long for one message is posted in pieces and the next change
   starts a new message.
5. The context in use (gateway.rendering.usage rule 5) is the session's: it stays from turn to
   turn, is forgotten at a compaction, and its warning is posted once per crossing of
   `CONTEXT_WARN_PERCENT`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from gateway.platform import MessageRef, PlatformLimits
from gateway.rendering import operations as op
from gateway.rendering.operations import Operation
from gateway.rendering.usage import (
    CONTEXT_WARN_PERCENT,
    compacted_line,
    context_line,
    context_percent,
    context_warning,
)
from gateway.rendering.views import progress_view
from rawp import events as ev

Chunks = Callable[[str], list[str]]
Text = Callable[[str], list[Operation]]  # the core's text path (posts, chunked)


class ProgressMessage:
    def __init__(self, limits: PlatformLimits, chunks: Chunks, text: Text) -> None:
        self._limits = limits
        self._chunks = chunks
        self._text = text
        self.message: MessageRef | None = None
        self._lists: dict[str, str] = {}  # "plan", "tasks" → the list as shown
        self._asked: str | None = None
        self._percent: int | None = None
        self._warned = False

    def new_turn(self) -> None:
        """Each turn gets its own message, at the bottom where it is seen (rule 2)."""
        self.message, self._lists, self._asked = None, {}, None

    def list_changed(
        self, kind: str, text: str, running: Sequence[ev.ToolInvokeRequest]
    ) -> list[Operation]:
        """A task list or plan changed (G-TASK-06)."""
        self._lists[kind] = text
        return self.show(running)

    def show(
        self, running: Sequence[ev.ToolInvokeRequest], *, final: bool = False
    ) -> list[Operation]:
        """Rules 1–4: what shows the current state."""
        text = self._view([] if final else running)
        if text is None:
            return []
        if text == self._asked and not (final and self.message is not None):
            return []  # at the end the driver is told even so: it may hold an older edit
        self._asked = text
        chunks = self._chunks(text)
        if self.message is not None and len(chunks) == 1 and self._limits.supports_edit:
            return [op.Edit(self.message, chunks[0], coalesce=not final)]
        if len(chunks) == 1:
            return [op.Post(chunks[0], keep="progress")]  # kept once the driver posted it
        self.message = None
        return [op.Post(chunk) for chunk in chunks]

    def _view(self, running: Sequence[ev.ToolInvokeRequest]) -> str | None:
        lists = [self._lists[kind] for kind in ("plan", "tasks") if kind in self._lists]
        if not self._limits.supports_edit:  # rule 4
            return progress_view(lists, [], None)
        percent = self._percent
        return progress_view(lists, running, context_line(percent) if percent is not None else None)

    def usage(self, p: ev.Usage, running: Sequence[ev.ToolInvokeRequest]) -> list[Operation]:
        """Rule 5: the context share, and its warning once per crossing."""
        percent = context_percent(p)
        if percent is None:
            return []
        self._percent = percent
        ops: list[Operation] = []
        if percent < CONTEXT_WARN_PERCENT:
            self._warned = False
        elif not self._warned:
            self._warned = True
            ops += self._text(context_warning(percent))
        return ops + self.show(running)

    def compacted(self, p: ev.ContextCompacted) -> list[Operation]:
        """Rule 5: a notice; the share is unknown until the agent reports it again."""
        self._percent, self._warned = None, False
        return self._text(compacted_line(p.before_tokens, p.after_tokens))
