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
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from client.agents.base import Agent, Prompt, Reference
from client.paths import PathGuard
from rawp.errors import BadRequest, Forbidden
from rawp.events import PromptRequest
from rawp.fileref import FileToken, parse


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
    prompt = agent.convert(message_id, parts, references, request.input_type)
    if "\x00" in prompt.text:  # rule 4
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
    return replace(prompt, context_files=tuple(context))
