"""The open interaction prompts of one platform, and the answers pushed to them.

The gateway owns the prompts (issue 18 §1): an adapter posts a prompt and `open`s it here, and
when a user presses a button or submits a modal it decodes that into a `Choice` and pushes it
with `answer`; the gateway's `wait_for_choice` (the `ChatPlatform` default) takes it from here.
So the adapter knows nothing of who waits, and the wait is written once for every platform.

- A prompt is found by (where, interaction id): `where` is the adapter's own opaque key for the
  conversation (Discord: the thread id; Slack: channel and thread ts), which a button carries
  across a restart. A prompt re-posted after a reconnect joins the open one, so the old and the
  new message answer the same wait.
- The waiter finds its prompt by the message it posted (`MessageRef`); closing that message
  ends the prompt.
- `answer` says whether anyone waits: False is a stale press (the adapter hands it to
  `ConversationHooks.stale_choice`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Hashable
from dataclasses import dataclass, field

from gateway.platform import Choice, InteractionPrompt, MessageRef

log = logging.getLogger(__name__)

# Presses one prompt holds until the core takes them: the core takes each at once (and refuses
# the wrong presser privately), so more than this is a flood, not a queue of real answers.
MAX_PENDING_ANSWERS = 64


@dataclass
class OpenPrompt:
    """A prompt someone waits on: its answers queue up until `wait` takes them."""

    prompt: InteractionPrompt
    text: str  # the posted text, shown again with the outcome when the prompt closes
    answers: asyncio.Queue[Choice] = field(
        default_factory=lambda: asyncio.Queue(MAX_PENDING_ANSWERS)
    )


def _message_key(message: MessageRef) -> tuple[str, str]:
    return (message.conversation.channel_id, message.message_id)


class PromptBoard:
    """Open prompts by (where, interaction id), and which message shows which prompt."""

    def __init__(self) -> None:
        self._open: dict[tuple[Hashable, str], OpenPrompt] = {}
        self._by_message: dict[tuple[str, str], tuple[Hashable, str]] = {}

    def open(self, where: Hashable, prompt: InteractionPrompt, message: MessageRef, text: str):
        """`message` now shows `prompt` in `where` (a re-post joins the prompt already open)."""
        wanted = (where, prompt.interaction_id)
        self._open.setdefault(wanted, OpenPrompt(prompt, text))
        self._by_message[_message_key(message)] = wanted

    def find(self, where: Hashable, interaction_id: str) -> OpenPrompt | None:
        return self._open.get((where, interaction_id))

    def answer(self, where: Hashable, interaction_id: str, choice: Choice) -> bool:
        """Push a press or a submission; False when nobody waits for that prompt (stale)."""
        waiting = self.find(where, interaction_id)
        if waiting is None:
            return False
        try:
            waiting.answers.put_nowait(choice)  # the core accepts it or refuses it privately
        except asyncio.QueueFull:
            log.warning("prompt %s: too many unanswered presses; one dropped", interaction_id)
        return True

    async def wait(self, message: MessageRef, timeout_s: float | None) -> Choice | None:
        """The next answer to the prompt `message` shows; None on timeout or if none is open."""
        wanted = self._by_message.get(_message_key(message))
        waiting = self._open.get(wanted) if wanted else None
        if waiting is None:
            return None
        try:
            return await asyncio.wait_for(waiting.answers.get(), timeout_s)
        except TimeoutError:
            return None

    def close(self, message: MessageRef) -> OpenPrompt | None:
        """Forget the prompt `message` shows; the closed prompt, if it was open."""
        wanted = self._by_message.pop(_message_key(message), None)
        return self._open.pop(wanted, None) if wanted else None


def option_of(prompt: InteractionPrompt | None, encoded: str) -> str:
    """The option id a button names: itself, or `#index` into the prompt's options (a button
    whose option id would not fit the platform's id or value field carries its index)."""
    if prompt is None or not encoded.startswith("#") or not encoded[1:].isdigit():
        return encoded
    options = tuple(prompt.options)
    index = int(encoded[1:])
    return options[index].option_id if index < len(options) else encoded
