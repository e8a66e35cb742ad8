"""A skeleton third chat platform: every `ChatPlatform` method, backed by a dict.

Copy this to `adapters/<name>/platform.py` and replace each body with the platform's API
calls (docs/architecture.md, "Adding a chat platform"). What it keeps from the seam's rules
(gateway/platform.py docstring): every method is async, a message already gone is not an
error, a rate limit is waited out inside the adapter, and a prompt's answers are pushed to
the gateway's prompt board (gateway/approvals/prompt_board.py): the adapter `open`s each prompt it
posts and `answer`s it when a button is pressed; the gateway waits (issue 18 §1).
"""

from __future__ import annotations

import itertools

from gateway.approvals.prompt_board import PromptBoard
from gateway.platform import (
    ChatPlatform,
    Choice,
    ConversationRef,
    InteractionPrompt,
    MessageRef,
    PlatformLimits,
)


class SkeletonPlatform(ChatPlatform):
    name = "skeleton"
    # What the platform allows, counted as it counts; the renderer chunks to this.
    limits = PlatformLimits(max_message_length=500, typing_expiry_s=None, max_buttons=5)
    # Are user ids unique only within a workspace (as Slack's are)? Then the master subject
    # carries the workspace too (gateway.sessions.conversations rule 1).
    user_ids_per_workspace = False

    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self.messages: dict[str, str] = {}  # message id → text: the "platform"
        self.reactions: dict[str, set[str]] = {}
        self.prompt_board = PromptBoard()  # keyed by (channel id, interaction id)

    def _new_ref(self, conversation: ConversationRef, text: str) -> MessageRef:
        message_id = f"m{next(self._ids)}"
        self.messages[message_id] = text
        return MessageRef(conversation, message_id)

    # --- content ------------------------------------------------------------------------
    async def send_message(self, conversation: ConversationRef, text: str) -> MessageRef:
        return self._new_ref(conversation, text)

    async def edit_message(self, message: MessageRef, text: str) -> None:
        if message.message_id in self.messages:  # gone is not an error (rule 1)
            self.messages[message.message_id] = text

    async def delete_message(self, message: MessageRef) -> None:
        self.messages.pop(message.message_id, None)

    async def send_hidden(self, conversation: ConversationRef, title: str, text: str) -> None:
        self._new_ref(conversation, f"{title} (hidden): {text}")

    async def send_ephemeral(self, conversation: ConversationRef, user_id: str, text: str) -> None:
        self._new_ref(conversation, f"@{user_id} only: {text}")

    # --- decorations --------------------------------------------------------------------
    async def add_reaction(self, message: MessageRef, emoji: str) -> None:
        self.reactions.setdefault(message.message_id, set()).add(emoji)

    async def remove_reaction(self, message: MessageRef, emoji: str) -> None:
        self.reactions.get(message.message_id, set()).discard(emoji)

    async def trigger_typing(self, conversation: ConversationRef) -> None:
        return None  # no typing indicator: limits.typing_expiry_s is None

    async def set_status(self, conversation: ConversationRef, text: str | None) -> None:
        return None  # no status line on this platform

    # --- interactions -------------------------------------------------------------------
    async def send_interaction(
        self, conversation: ConversationRef, prompt: InteractionPrompt
    ) -> MessageRef:
        buttons = " ".join(f"[{o.label}]" for o in prompt.options)
        text = f"{prompt.prompt} {buttons}".strip()
        ref = self._new_ref(conversation, text)
        # `where` is the adapter's own key for the conversation, one a button carries.
        self.prompt_board.open(conversation.channel_id, prompt, ref, text)
        return ref

    def press(self, message: MessageRef, interaction_id: str, choice: Choice) -> bool:
        """What the platform's button/submit handler does: push the answer; False when nobody
        waits for it (a press from before a restart: the bot hands it to `stale_choice`)."""
        return self.prompt_board.answer(message.conversation.channel_id, interaction_id, choice)

    async def close_interaction(self, message: MessageRef, outcome: str) -> None:
        self.prompt_board.close(message)
        if message.message_id in self.messages:
            self.messages[message.message_id] += f" — {outcome}"
