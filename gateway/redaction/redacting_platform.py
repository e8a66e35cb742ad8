"""The seam where a session's text leaves for a chat platform, redacted (issue 15 §3).

`RedactingPlatform` wraps the session's `ChatPlatform`: every text it is handed — messages,
edits, hidden thinking, ephemeral notes, the status line, approval prompts and their button
labels, an approval's outcome, the name and (for text types) the content of an uploaded file —
passes `gateway.redaction.redact.Redactor` first. The renderer builds
one per session when redaction is on for the session's node (RenderOptions), so nothing the
renderer, its `Poster` or its `InteractionFlow` posts can get past it.

Long text is redacted before it is cut into messages (`chunks`): a secret is never split over
two messages, and a marker longer than what it hides cannot push a chunk past the limit. The
chunks made so are remembered (a bounded set) and not redacted a second time when posted.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import replace

from gateway.platform import (
    ChatPlatform,
    Choice,
    ChoiceOption,
    ConversationRef,
    InteractionPrompt,
    MessageRef,
)
from gateway.redaction.redact import Redactor
from gateway.rendering.chunker import split_markdown

_CLEAN_MEMORY = 256  # chunks redacted before the cut and not yet posted
_TEXT_TYPES = {
    "application/json",
    "application/xml",
    "application/yaml",
    "application/x-yaml",
    "application/toml",
    "application/javascript",
    "application/x-sh",
}


def is_text_type(mime_type: str) -> bool:
    kind = mime_type.split(";")[0].strip().lower()
    return kind.startswith("text/") or kind in _TEXT_TYPES or kind.endswith(("+json", "+xml"))


class RedactingPlatform(ChatPlatform):
    def __init__(self, inner: ChatPlatform, redactor: Redactor) -> None:
        self.inner = inner
        self.redactor = redactor
        self.name = inner.name
        self.limits = inner.limits
        self.user_ids_per_workspace = inner.user_ids_per_workspace
        self.prompt_board = inner.prompt_board
        self._clean: OrderedDict[str, None] = OrderedDict()

    # The adapter's own prompt-board key and delivery (gateway.replicas.cluster_routing rule 3): the
    # base class's defaults would use the wrong key for an adapter that overrides them.
    def where_of(self, conversation: ConversationRef):
        return self.inner.where_of(conversation)

    def deliver_choice(self, conversation: ConversationRef, interaction_id: str, choice: Choice):
        return self.inner.deliver_choice(conversation, interaction_id, choice)

    def chunks(self, text: str, limit: int) -> list[str]:
        """`text` redacted whole, then cut to `limit` (gateway.rendering.chunker)."""
        pieces = split_markdown(self.redactor.redact(text), limit)
        for piece in pieces:
            self._clean[piece] = None
            if len(self._clean) > _CLEAN_MEMORY:
                self._clean.popitem(last=False)
        return pieces

    def _text(self, text: str) -> str:
        if text in self._clean:
            del self._clean[text]
            return text
        return self.redactor.redact(text)

    def _prompt(self, prompt: InteractionPrompt) -> InteractionPrompt:
        options = [
            ChoiceOption(o.option_id, self.redactor.redact(o.label), o.kind) for o in prompt.options
        ]
        return replace(prompt, prompt=self.redactor.redact(prompt.prompt), options=options)

    # --- text: redacted ---------------------------------------------------------------------

    async def send_message(self, conversation: ConversationRef, text: str) -> MessageRef:
        return await self.inner.send_message(conversation, self._text(text))

    async def send_keyed(self, conversation: ConversationRef, text: str, key: str) -> MessageRef:
        return await self.inner.send_keyed(conversation, self._text(text), key)

    async def edit_message(self, message: MessageRef, text: str) -> None:
        await self.inner.edit_message(message, self._text(text))

    async def send_hidden(self, conversation: ConversationRef, title: str, text: str) -> None:
        await self.inner.send_hidden(conversation, title, self.redactor.redact(text))

    async def send_ephemeral(self, conversation: ConversationRef, user_id: str, text: str) -> None:
        await self.inner.send_ephemeral(conversation, user_id, self.redactor.redact(text))

    async def set_status(self, conversation: ConversationRef, text: str | None) -> None:
        shown = self.redactor.redact(text) if text else text
        await self.inner.set_status(conversation, shown)

    async def send_interaction(
        self, conversation: ConversationRef, prompt: InteractionPrompt
    ) -> MessageRef:
        return await self.inner.send_interaction(conversation, self._prompt(prompt))

    async def send_interaction_keyed(
        self, conversation: ConversationRef, prompt: InteractionPrompt, key: str
    ) -> MessageRef:
        return await self.inner.send_interaction_keyed(conversation, self._prompt(prompt), key)

    async def close_interaction(self, message: MessageRef, outcome: str) -> None:
        await self.inner.close_interaction(message, self.redactor.redact(outcome))

    async def open_thread(self, conversation: ConversationRef, title: str) -> ConversationRef:
        return await self.inner.open_thread(conversation, self.redactor.redact(title))

    async def open_thread_on(self, message: MessageRef, title: str) -> ConversationRef:
        return await self.inner.open_thread_on(message, self.redactor.redact(title))

    # --- files: the name redacted, a text file's content too --------------------------------

    async def upload_file(
        self, conversation: ConversationRef, name: str, mime_type: str, data: bytes
    ) -> MessageRef | None:
        shown = self.redactor.redact(name)
        return await self.inner.upload_file(
            conversation, shown, mime_type, self._file(mime_type, data)
        )

    async def upload_keyed(
        self, conversation: ConversationRef, name: str, mime_type: str, data: bytes, key: str
    ) -> MessageRef | None:
        shown, content = self.redactor.redact(name), self._file(mime_type, data)
        return await self.inner.upload_keyed(conversation, shown, mime_type, content, key)

    def _file(self, mime_type: str, data: bytes) -> bytes:
        """A text file (by its type, and only if it is UTF-8) redacted like any text; other
        files pass unchanged: a credential inside an image or an archive is not looked for."""
        if not is_text_type(mime_type):
            return data
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return data
        return self.redactor.redact(text).encode("utf-8")

    # --- no text: passed through ------------------------------------------------------------

    async def find_keyed(self, conversation: ConversationRef, key: str) -> MessageRef | None:
        return await self.inner.find_keyed(conversation, key)

    async def delete_message(self, message: MessageRef) -> None:
        await self.inner.delete_message(message)

    async def add_reaction(self, message: MessageRef, emoji: str) -> None:
        await self.inner.add_reaction(message, emoji)

    async def remove_reaction(self, message: MessageRef, emoji: str) -> None:
        await self.inner.remove_reaction(message, emoji)

    async def trigger_typing(self, conversation: ConversationRef) -> None:
        await self.inner.trigger_typing(conversation)

    async def approvers(self, conversation: ConversationRef) -> frozenset[str]:
        return await self.inner.approvers(conversation)  # who may answer: not text, not redacted

    async def wait_for_choice(self, message: MessageRef, timeout_s: float | None) -> Choice | None:
        return await self.inner.wait_for_choice(message, timeout_s)
