"""From `control.prompt.request` to an agent's `Prompt` (DPS §16.2–§16.3).

1. `prompt_text` is parsed with `rawp.fileref.parse` (tokens first, then unescaping, K-11).
2. Each token's reference is resolved inside the session's workspace (§7.2): a path that leads
   outside is refused outright (`FILE_REFERENCE_FORBIDDEN`, nothing runs); a path inside that
   does not name an existing file is passed on as its `display_path` text (F-ADPT-05).
3. The agent kind converts the result (`Agent.convert`); `context_files` are confined the same
   way and handed on as `Prompt.context_files`.
4. A prompt whose text (display paths included) holds a NUL character is refused for every
   agent kind with `session.error` `INVALID_PROMPT`, and nothing runs: no process can take
   it in an argument or an environment variable (the script kind's `RAWP_PROMPT`), and one
   rule for all kinds is clearer than a kind-dependent one (docs/protocol.md, Decisions).
5. Attachments (client.files.attachments) are checked last, once nothing else can refuse the
   prompt: an oversize or undecodable one refuses it (nothing runs); images go on to the
   kind in `Prompt.images`; every other file is saved into the workspace and referenced by
   a file token appended to the text ("Attached: …"), which each kind converts as it converts
   a file the user picked (DPS §16.3).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from client.agents.base import Agent, ImageAttachment, Prompt, Reference, SavedAttachment
from client.files.attachments import AttachmentRefused, Received, receive, save_attachment
from client.files.paths import PathGuard
from rawp.errors import BadRequest, Forbidden
from rawp.events import PromptRequest
from rawp.fileref import FileToken, Part, parse, to_literal


class PromptRefused(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def build_prompt(
    request: PromptRequest, message_id: str, *, agent: Agent, guard: PathGuard, workspace: Path
) -> Prompt:
    parts = parse(request.prompt_text, request.file_references)
    used = {part.ref_id for part in parts if isinstance(part, FileToken)}
    references = []
    for ref in request.file_references:
        if ref.ref_id not in used:
            continue
        display = ref.display_path or ref.path
        try:
            real = guard.resolve(ref.path, workspace=workspace, relative_to=workspace)
        except (Forbidden, BadRequest) as exc:
            raise PromptRefused(
                "FILE_REFERENCE_FORBIDDEN", f"file reference {ref.ref_id}: {exc.message}"
            ) from None
        path = str(real.relative_to(workspace)) if real.is_file() else None
        references.append(Reference(ref.ref_id, display, path))
    if "\x00" in to_literal(parts):  # rule 4 (paths from the guard never hold one)
        raise PromptRefused(
            "INVALID_PROMPT", "the prompt contains a NUL character, which no agent can be given"
        )
    # F-EXT-02: context files are independent of the tokens; same confinement, and only
    # existing files are handed on (a missing one has no place in the text to fall back to).
    context = []
    for item in request.context_files:
        try:
            real = guard.resolve(item.path, workspace=workspace, relative_to=workspace)
        except (Forbidden, BadRequest) as exc:
            raise PromptRefused(
                "FILE_REFERENCE_FORBIDDEN", f"context file {item.path!r}: {exc.message}"
            ) from None
        if real.is_file() and (rel := str(real.relative_to(workspace))) not in context:
            context.append(rel)
    try:
        received = receive(request.attachments)  # rule 5
        saved = _save_files(received, agent.spec.attachments_dir, workspace)
    except AttachmentRefused as exc:
        raise PromptRefused(exc.code, exc.message) from None
    if saved:
        parts, references = _with_attachments(parts, references, saved)
    prompt = agent.convert(message_id, parts, references, request.input_type)
    images = tuple(
        ImageAttachment(r.name, r.image_type, r.encoded) for r in received if r.image_type
    )
    return replace(prompt, context_files=tuple(context), images=images, attachments=tuple(saved))


def _save_files(received: list[Received], folder: str, workspace: Path) -> list[SavedAttachment]:
    return [
        SavedAttachment(r.name, save_attachment(workspace, folder, r.name, r.data), r.mime_type)
        for r in received
        if r.image_type is None
    ]


def _with_attachments(
    parts: list[Part], references: list[Reference], saved: list[SavedAttachment]
) -> tuple[list[Part], list[Reference]]:
    """Rule 5: "…\n\nAttached: <token>, <token>", with ref_ids no request reference uses."""
    taken = {ref.ref_id for ref in references}
    said = "".join(p for p in parts if isinstance(p, str)).strip() or any(
        isinstance(p, FileToken) for p in parts
    )
    tail: list[Part] = ["\n\nAttached: " if said else "Attached: "]
    references = list(references)
    for n, item in enumerate(saved):
        ref_id = f"attachment_{n}"
        while ref_id in taken:
            ref_id += "_"
        references.append(Reference(ref_id, item.path, item.path))
        tail += [", "] if n else []
        tail.append(FileToken(ref_id, item.path))
    return [*parts, *tail], references
