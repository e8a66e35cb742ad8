"""From `control.prompt.request` to an agent's `Prompt` (DPS §16.2–§16.3).

1. `prompt_text` is parsed with `rawp.fileref.parse` (tokens first, then unescaping, K-11).
2. Each token's reference is resolved inside the session's workspace (§7.2): a path that leads
   outside is refused outright (`FILE_REFERENCE_FORBIDDEN`, nothing runs); a path inside that
   does not name an existing file is passed on as its `display_path` text (F-ADPT-05).
3. The agent kind converts the result (`Agent.convert`).
"""

from __future__ import annotations

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
    return agent.convert(message_id, parts, references, request.input_type)
