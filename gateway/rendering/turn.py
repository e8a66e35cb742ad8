"""What the renderer remembers about the turn in progress (one per session at a time).

The pure core (gateway.rendering.render_core) keeps and changes it; the driver's timers
(gateway.rendering.render) own the fields about time: `heartbeat`, `working_timer`,
`working_shown` and the interim status message's.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gateway.platform import MessageRef
from gateway.rendering.typing import TypingHeartbeat
from rawp.events import ToolInvokeRequest, ToolInvokeResult, Usage

if TYPE_CHECKING:
    from gateway.rendering.render_options import PromptOrigin

# Reactions on the user's message (G-NS-13): working, then how the turn ended.
WORKING, DONE, FAILED, STOPPED = "⏳", "✅", "❌", "⏹"


@dataclass
class Turn:
    turn_id: str
    started_at: float  # monotonic seconds, for the 30-second interim status (G-NS-11)
    user_message: MessageRef | None = None
    user_id: str | None = None
    prompt_message_id: str | None = None
    heartbeat: TypingHeartbeat | None = None

    # content_index → text so far; a block is sent once, when its `done` arrives (K-16)
    text: dict[int, list[str]] = field(default_factory=dict)
    text_sent: set[int] = field(default_factory=set)
    thinking: dict[int, list[str]] = field(default_factory=dict)

    # tools: every request seen, those still running, and parallel groups being collected
    requests: dict[str, ToolInvokeRequest] = field(default_factory=dict)
    running: dict[str, ToolInvokeRequest] = field(default_factory=dict)
    group_results: dict[str, list[ToolInvokeResult]] = field(default_factory=dict)

    # ⏳ on the user's message (rule 7 of gateway.rendering.render): its timer, and whether it
    # went on
    working_timer: asyncio.Task[None] | None = None
    working_shown: bool = False
    status_message: MessageRef | None = None  # the interim status message, once sent
    status_message_text: str | None = None
    # Interim messages posted so far (their post keys, gateway.rendering.posting).
    interim_posts: int = 0
    interim_retired: bool = False  # the progress message took its place (status_line rule 11)
    failed: bool = False  # an `error`/`fatal` agent.error or stop_reason `error` → ❌
    fatal: bool = False  # typing already stopped (G-NS-09)
    usage: list[Usage] = field(default_factory=list)  # the turn's `session.usage` (its footer)

    def adopt_prompt(self, prompt_message_id: str, origin: PromptOrigin | None) -> bool:
        """The `session.turn.start` of a turn a stray frame started early: True when it learnt
        the chat message the prompt came from only now."""
        self.prompt_message_id = prompt_message_id
        if origin and self.user_message is None:
            self.user_message, self.user_id = origin.message, origin.user_id
            return True
        return False

    def group_complete(self, group_id: str) -> bool:
        """True when no tool of `group_id` is still running."""
        return not any(r.parallel_group_id == group_id for r in self.running.values())

    def unsent_text(self) -> list[str]:
        """Blocks whose `done` never came, in `content_index` order (the turn-end fallback)."""
        return ["".join(self.text[i]) for i in sorted(self.text) if i not in self.text_sent]
