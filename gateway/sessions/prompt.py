"""From what a user typed and picked to a `control.prompt.request` payload (DPS §6.1.1, §16).

- Typed text is escaped exactly once, here at the edge that received it (K-08, F-ESC-01/02),
  by `rawp.fileref.compose`; a file picked from autocomplete becomes a `<@file:ref_N|path>`
  token with its `file_references` entry (§16.2.1, §16.4).
- A message whose first word is `/name` of a command the agent published
  (`agent.commands.publish`, cached per session: G-CMD-07/34) is sent with
  `input_type: slash_command`; `prompt_text` keeps the leading `/` as typed.
- Attachments are checked against `AttachmentLimits` (rawp.attachments, the one place the
  limits are stated) before anything is sent, so a too-large file is refused with a message
  the user can act on rather than a frame the master or the client refuses.
- So is the whole prompt (issue 28 §3): a text that would make the `control.prompt.request`
  frame larger than the default `max_frame_size` is refused here, with the limit in words,
  and nothing is sent — the master would refuse the frame, and a prompt sent and refused is
  one the chat must then take back. A session pinned to a smaller limit still has the master
  refuse it; that refusal names the prompt, which then gets ❌ (gateway.sessions.busy rule 3).
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from dataclasses import dataclass, field

from gateway.platform import size_text
from rawp.attachments import AttachmentLimits
from rawp.clock import new_id
from rawp.config import DEFAULT_LIMITS
from rawp.events import (
    Attachment,
    Command,
    CommandsPublish,
    FileCandidate,
    FileReference,
    PromptRequest,
)
from rawp.fileref import FileToken, Part, compose
from rawp.frames import encode_frame

# What a sent prompt's envelope will hold, for measuring its frame before it exists: every id
# is a UUID and every timestamp has this length.
_ID, _STAMP = new_id(), "2026-01-01T00:00:00.000Z"


class PromptError(ValueError):
    """A prompt that cannot be sent as it stands; the message is for the user."""


@dataclass(frozen=True, slots=True)
class PickedFile:
    """A file the user chose from the autocomplete (a `session.file.candidates` entry)."""

    path: str
    display_path: str | None = None
    name: str | None = None
    size_bytes: int | None = None
    mime_type: str | None = None

    @classmethod
    def from_candidate(cls, candidate: FileCandidate) -> PickedFile:
        return cls(
            path=candidate.path,
            display_path=candidate.path,
            name=candidate.name,
            size_bytes=candidate.size_bytes,
            mime_type=candidate.mime_type,
        )


@dataclass
class PromptDraft:
    """A prompt being put together: text, picked files and attachments, in the user's order."""

    attachment_limits: AttachmentLimits = field(default_factory=AttachmentLimits)
    max_frame_size: int = DEFAULT_LIMITS.max_frame_size
    parts: list[Part] = field(default_factory=list)
    references: list[FileReference] = field(default_factory=list)
    attachments: list[Attachment] = field(default_factory=list)
    _sizes: list[tuple[str, int]] = field(default_factory=list, repr=False)

    def add_text(self, text: str) -> None:
        self.parts.append(text)

    def add_file(self, picked: PickedFile) -> FileToken:
        """Insert a token for `picked`; the same path picked twice shares one reference."""
        for ref in self.references:
            if ref.path == picked.path:
                token = FileToken(ref.ref_id, ref.display_path or ref.path)
                break
        else:
            ref = FileReference(
                ref_id=f"ref_{len(self.references)}",
                path=picked.path,
                display_path=picked.display_path or picked.path,
                name=picked.name,
                size_bytes=picked.size_bytes,
                mime_type=picked.mime_type,
            )
            self.references.append(ref)
            token = FileToken(ref.ref_id, ref.display_path or ref.path)
        self.parts.append(token)
        return token

    def add_attachment(self, name: str, mime_type: str, data: bytes) -> None:
        self._sizes.append((name, len(data)))
        if problem := self.attachment_limits.refusal(self._sizes):
            self._sizes.pop()
            raise PromptError(problem)
        encoded = base64.b64encode(data).decode()
        self.attachments.append(Attachment(name=name, mime_type=mime_type, data=encoded))

    def build(self, input_type: str = "text") -> PromptRequest:
        prompt_text = compose(self.parts)
        if not prompt_text.strip() and not self.attachments:
            raise PromptError("the prompt is empty")
        # Only references whose token is still in the text are sent (§16.4).
        used = {p.ref_id for p in self.parts if isinstance(p, FileToken)}
        request = PromptRequest(
            prompt_text=prompt_text,
            input_type=input_type,
            file_references=[r for r in self.references if r.ref_id in used],
            attachments=self.attachments or None,
        )
        if problem := too_long(request, self.max_frame_size):
            raise PromptError(problem)
        return request


def too_long(request: PromptRequest, max_frame_size: int) -> str | None:
    """Why `request` cannot be sent in one frame of `max_frame_size` bytes, in words, or None.
    Measured on the frame as it will be written: JSON escapes can make text longer."""
    size = len(
        encode_frame(
            "control.prompt.request", request, message_id=_ID, timestamp=_STAMP, session_id=_ID
        )
    )
    if size <= max_frame_size:
        return None
    with_files = " with its attachments" if request.attachments else ""
    return (
        f"this message is too long to send: a prompt may be at most {size_text(max_frame_size)} "
        f"({max_frame_size:,} bytes){with_files}, and this one is {size_text(size)}. "
        "Shorten it or send it in parts."
    )


def text_prompt(text: str) -> PromptRequest:
    draft = PromptDraft()
    draft.add_text(text)
    return draft.build()


class CommandCache:
    """The agent's slash commands for one session, replaced whole on each publish (G-CMD-34)."""

    def __init__(self, commands: Iterable[Command] = ()) -> None:
        self._by_name: dict[str, Command] = {c.name: c for c in commands}

    def update(self, publish: CommandsPublish) -> None:
        self._by_name = {c.name: c for c in publish.commands}

    def get(self, name: str) -> Command | None:
        return self._by_name.get(name)

    def listing(self, prefix: str = "") -> list[Command]:
        """Commands whose name starts with `prefix` (G-CMD-14), by category then name (G-CMD-16)."""
        found = [c for c in self._by_name.values() if c.name.startswith(prefix)]
        return sorted(found, key=lambda c: (c.category or "", c.name))

    def describe(self, prefix: str = "") -> list[str]:
        """`/name — description` lines (G-CMD-08), with `<param>` hints for required ones."""
        lines = []
        for c in self.listing(prefix):
            hints = "".join(f" <{p.name}>" for p in c.parameters if p.required)
            lines.append(f"/{c.name}{hints} — {c.description}".rstrip(" —"))
        return lines

    def match(self, text: str) -> tuple[Command, str] | None:
        """`(command, arguments)` when `text` starts with `/name` of a published command.

        Only a `/` at the very start counts (G-CMD-02/03): `path/to/file` or a URL never does,
        and `/etc/hosts is odd` stays text unless the agent publishes an `etc/hosts` command.
        """
        if not text.startswith("/"):
            return None
        name, _, args = text[1:].partition(" ")
        command = self._by_name.get(name)
        return (command, args.strip()) if command else None


def slash_prompt(command: Command, args: str = "") -> PromptRequest:
    """`/name args` with `input_type: slash_command` (DPS §6.1.1, G-CMD-33)."""
    missing = [p.name for p in command.parameters if p.required] if not args else []
    if missing:
        raise PromptError(f"/{command.name} needs " + ", ".join(f"<{m}>" for m in missing))
    draft = PromptDraft()
    draft.add_text(f"/{command.name} {args}".rstrip())
    return draft.build(input_type="slash_command")
