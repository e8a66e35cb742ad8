"""What a session's rendering is set to, and the fixed lines it shows (gateway.rendering.render).

Kept apart from the renderer so that the adapters and the conversation layer can name the
options without the renderer's machinery, and the renderer module stays one concern.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gateway.approvals.interactions import DEFAULT_TIMEOUT_S
from gateway.platform import MessageRef

REDACTED_THINKING = "💭 _The model's thinking here is redacted._"
STATE_LINES = {
    "thinking": "💭 Thinking…",
    "tool_calling": "🔧 Using tools…",
    "awaiting_input": "⏸ Waiting for your answer…",
    "error": "❌ Error",
}
STOP_NOTES = {
    "max_tokens": "⚠️ The answer was cut off: the model reached its output limit.",
    "max_turn_requests": "⚠️ The agent stopped: too many steps in one turn.",
    "refusal": "⚠️ The model declined to answer.",
}


@dataclass(frozen=True)
class RenderOptions:
    show_thinking: bool = False
    interim_after_s: float = 30.0
    # Issue 19 §6: a short turn shows typing and its outcome, not a burst of decorations.
    working_after_s: float = 2.0  # ⏳ on the prompt once a turn has run this long (rule 7)
    # At most one status line change per this long (gateway.rendering.status_line).
    status_every_s: float = 2.0
    approver_ids: frozenset[str] = frozenset()  # may answer any approval (a configured role)
    # An approval whose agent names no timeout is denied after this long (issue 15 §4).
    approval_timeout_s: float = DEFAULT_TIMEOUT_S
    # Rule 9 (issue 15 §3): credentials are redacted before chat, unless the gateway's
    # operator named the session's node in `unredacted_nodes` (docs/gateway.md).
    redact: bool = True
    unredacted_nodes: frozenset[str] = frozenset()
    usage_footer: bool = False  # a usage line after each turn (gateway.rendering.usage rule 3)
    # agent.file bytes held per session (gateway.rendering.uploads).
    max_file_bytes: int = 32 * 1024 * 1024

    def for_node(self, node_id: str) -> RenderOptions:
        """These options for a session on `node_id`."""
        return replace(self, redact=self.redact and node_id not in self.unredacted_nodes)


@dataclass(frozen=True)
class PromptOrigin:
    """The chat message a prompt came from, so its turn can react on it."""

    message: MessageRef | None
    user_id: str | None
