"""The console as a chat platform: a terminal conversation that behaves like Discord.

It is a non-streaming platform on purpose, so `rawp up` shows what a chat user sees: a typing
line while the agent works, whole messages split at `limits.max_message_length`, thinking as a
spoiler, a status line, reactions on the user's message and numbered choices for approvals.
Output goes to the given text stream; answers are read one line per prompt from the given
`LineReader` (a terminal, a pipe or `io.StringIO` alike).

A terminal cannot take back what it printed, so an edit prints the new text marked `✎` and a
deletion prints nothing; `messages` keeps the real state (text, reactions, deleted).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TextIO

from adapters.console.lines import LineReader
from gateway.platform import (
    ChatPlatform,
    Choice,
    ConversationRef,
    InteractionPrompt,
    MessageRef,
    PlatformLimits,
)
from gateway.rendering.chunker import spoiler_messages

# Console messages are split like Discord's so the demo shows the same shapes.
CONSOLE_LIMITS = PlatformLimits(max_message_length=2000, typing_expiry_s=10.0, max_buttons=25)
REACTION_WORDS = {
    "⏳": "working…",
    "✅": "done",
    "❌": "failed",
    "⏹": "stopped",
    "🕒": "queued",
}


@dataclass
class ConsoleMessage:
    text: str
    author: str  # "agent" or the user's id
    reactions: list[str] = field(default_factory=list)
    deleted: bool = False
    interaction: InteractionPrompt | None = None


class ConsolePlatform(ChatPlatform):
    name = "console"

    def __init__(
        self,
        out: TextIO,
        lines: LineReader,
        *,
        limits: PlatformLimits = CONSOLE_LIMITS,
        user_id: str = "console",
    ) -> None:
        self.limits = limits
        self.user_id = user_id
        self.conversation = ConversationRef("console", "console")
        self.messages: dict[str, ConsoleMessage] = {}
        self.typing_calls = 0
        self._out = out
        self._lines = lines
        self._typing_shown = False
        self._status: str | None = None

    # --- output -----------------------------------------------------------------------------

    def _write(self, text: str) -> None:
        self._out.write(text + "\n")
        self._out.flush()

    def note(self, text: str) -> None:
        """A line for the console user that is not a chat message (listings, warnings)."""
        self._write(text)

    def _new_message(self, text: str, author: str = "agent") -> MessageRef:
        message_id = f"m{len(self.messages) + 1}"
        self.messages[message_id] = ConsoleMessage(text, author)
        return MessageRef(self.conversation, message_id)

    def record_user_message(self, text: str) -> MessageRef:
        """The line the user typed, as a message the turn can react on."""
        return self._new_message(text, author=self.user_id)

    async def send_message(self, conversation: ConversationRef, text: str) -> MessageRef:
        self._typing_shown = False  # like Discord: a message ends the typing line
        self._write(text)
        return self._new_message(text)

    async def edit_message(self, message: MessageRef, text: str) -> None:
        stored = self.messages.get(message.message_id)
        if stored is None or stored.deleted or stored.text == text:
            return
        stored.text = text
        self._write(f"✎ {text}")

    async def delete_message(self, message: MessageRef) -> None:
        stored = self.messages.get(message.message_id)
        if stored is not None:
            stored.deleted = True

    async def send_hidden(self, conversation: ConversationRef, title: str, text: str) -> None:
        for piece in spoiler_messages(title, text, self.limits.max_message_length):
            await self.send_message(conversation, piece)

    async def send_ephemeral(self, conversation: ConversationRef, user_id: str, text: str) -> None:
        self._write(f"(only you) {text}")

    async def add_reaction(self, message: MessageRef, emoji: str) -> None:
        stored = self.messages.get(message.message_id)
        if stored is None or emoji in stored.reactions:
            return
        stored.reactions.append(emoji)
        self._write(f"{emoji} {REACTION_WORDS.get(emoji, '')}".rstrip())

    async def remove_reaction(self, message: MessageRef, emoji: str) -> None:
        stored = self.messages.get(message.message_id)
        if stored is not None and emoji in stored.reactions:
            stored.reactions.remove(emoji)

    async def trigger_typing(self, conversation: ConversationRef) -> None:
        self.typing_calls += 1
        if not self._typing_shown:  # one line per stretch of typing, not one per refresh
            self._typing_shown = True
            self._write("⋯ typing…")

    async def set_status(self, conversation: ConversationRef, text: str | None) -> None:
        if text is not None and text != self._status:
            self._write(f"· {text}")
        self._status = text

    @property
    def status(self) -> str | None:
        return self._status

    # --- interactions -----------------------------------------------------------------------

    async def send_interaction(
        self, conversation: ConversationRef, prompt: InteractionPrompt
    ) -> MessageRef:
        lines = [f"❓ {prompt.prompt}"]
        lines += [f"  [{i}] {option.label}" for i, option in enumerate(prompt.options, 1)]
        if prompt.options:
            lines.append(f"Answer with a number (1–{len(prompt.options)}):")
        else:
            lines.append("Type your answer:")
        text = "\n".join(lines)
        self._typing_shown = False
        self._write(text)
        ref = self._new_message(text)
        self.messages[ref.message_id].interaction = prompt
        return ref

    async def wait_for_choice(self, message: MessageRef, timeout_s: float | None) -> Choice | None:
        stored = self.messages.get(message.message_id)
        prompt = stored.interaction if stored else None
        if prompt is None:
            return None
        while True:
            line = await self._lines.readline(timeout_s)
            if line is None:
                return None  # end of input or timeout: unanswered
            answer = line.strip()
            option = _pick(prompt, answer)
            if option is not None:
                return Choice(self.user_id, option_id=option)
            if not prompt.options and answer:
                return Choice(self.user_id, text=answer)
            self._write(f"Please answer with a number from 1 to {len(prompt.options)}.")

    async def close_interaction(self, message: MessageRef, outcome: str) -> None:
        stored = self.messages.get(message.message_id)
        if stored is not None and stored.interaction is not None:
            stored.interaction = None
            self._write(f"  {outcome}")


def _pick(prompt: InteractionPrompt, answer: str) -> str | None:
    """An option by its number, its id or its label (case-insensitive)."""
    if answer.isdigit() and 1 <= int(answer) <= len(prompt.options):
        return prompt.options[int(answer) - 1].option_id
    for option in prompt.options:
        if answer.casefold() in (option.option_id.casefold(), option.label.casefold()):
            return option.option_id
    return None
