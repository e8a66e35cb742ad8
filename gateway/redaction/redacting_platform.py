"""The seam where a session's text leaves for a chat platform, redacted (issue 15 §3).

`RedactingPlatform` wraps the session's `ChatPlatform` (a gateway.platform_middleware): every
text it is handed — messages, edits, hidden thinking, ephemeral notes, the status line, thread
titles, approval prompts and their button labels, an approval's outcome, the name and (for text
types) the content of an uploaded file: whatever the operation table marks as text — passes
`gateway.redaction.redact.Redactor` first. The renderer builds
one per session when redaction is on for the session's node (RenderOptions), so nothing the
renderer, its `Poster` or its `InteractionFlow` posts can get past it.

Long text is redacted before it is cut into messages (`chunks`): a secret is never split over
two messages, and a marker longer than what it hides cannot push a chunk past the limit. The
chunks made so are remembered (a bounded set) and not redacted a second time when posted.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import replace
from typing import Any

from gateway.platform import ChatPlatform, ChoiceOption, InteractionPrompt
from gateway.platform_middleware import PlatformCall, PlatformMiddleware, Proceed, Text
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


class RedactingPlatform(PlatformMiddleware):
    """Every argument the operation table (gateway.platform_middleware.OPS) marks as text is
    redacted on its way to the platform it wraps; everything else passes unchanged."""

    def __init__(self, inner: ChatPlatform, redactor: Redactor) -> None:
        super().__init__(inner)
        self.redactor = redactor
        self._clean: OrderedDict[str, None] = OrderedDict()

    def chunks(self, text: str, limit: int) -> list[str]:
        """`text` redacted whole, then cut to `limit` (gateway.rendering.chunker)."""
        pieces = split_markdown(self.redactor.redact(text), limit)
        for piece in pieces:
            self._clean[piece] = None
            if len(self._clean) > _CLEAN_MEMORY:
                self._clean.popitem(last=False)
        return pieces

    async def around(self, call: PlatformCall, proceed: Proceed) -> Any:
        shown = {name: self._shown(kind, call, name) for name, kind in call.op.texts.items()}
        return await proceed(call.with_args(**shown))

    def _shown(self, kind: Text, call: PlatformCall, name: str) -> Any:
        value = call.args[name]
        if kind is Text.BODY:
            return self._body(value)
        if kind is Text.PROMPT:
            return self._prompt(value)
        if kind is Text.FILE:
            return self._file(call.args["mime_type"], value)
        return self.redactor.redact(value) if value else value  # a LINE; None shows nothing

    def _body(self, text: str) -> str:
        """A chunk `chunks` made is clean already: not redacted a second time."""
        if text in self._clean:
            del self._clean[text]
            return text
        return self.redactor.redact(text)

    def _prompt(self, prompt: InteractionPrompt) -> InteractionPrompt:
        options = [
            ChoiceOption(o.option_id, self.redactor.redact(o.label), o.kind) for o in prompt.options
        ]
        return replace(prompt, prompt=self.redactor.redact(prompt.prompt), options=options)

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
