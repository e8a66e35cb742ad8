"""The one interface every agent kind implements (architecture: one seam per boundary).

A kind is a subclass of `Agent` registered in `client.agents.KINDS`. The session owns the
turn bookkeeping (`session.turn.start`/`.end`, `turn_id`, queueing, frame size) and talks to
its agent only through these methods:

* `start()` once, when the session is created by `session/init`;
* `convert(parts, references)` turns a parsed prompt into what this kind takes (DPS §16.3):
  the text and the files, each kind in its own way; tokens it cannot use become their
  `display_path` as text (F-ADPT-05);
* `prompt(prompt)` runs one turn, calling `self.emit(type, payload)` for each DPS event it
  produces (`agent.*`, `tool.*`, `session.usage`, …), and returns the turn's `stop_reason`;
* `cancel()` stops the running turn; `prompt()` then returns `"cancelled"`;
* `respond(response)` delivers a `control.interaction.response` to the running turn;
* `modes()` the modes the agent offers and the one it is in (None: it has none);
  `set_mode(mode)` changes it (`control.mode.set`, client.agents.modes) and, like any change
  of mode the agent makes itself, calls `mode_changed()` (the session re-sends its
  `session.capabilities`); `models()`/`set_model(model)` and `config_options()`/
  `set_config(config_id, value)` the same for models and (ACP) config options;
* `catalog()` lists the tools the agent may use (`tool.catalog.publish`, DPS §5);
  `invoke_tool(request)` runs one of them when it is published with `direct: true`;
* `close()` ends everything the agent runs, SIGTERM then SIGKILL after the grace period.

Attachments (client.files.attachments): files other than images arrive already saved in the
workspace and referenced like any file token. Images arrive in `Prompt.images`; a kind sends
those whose type `image_types()` names as image content and calls `images_as_files` for the
rest, which saves them under the agent's `attachments_dir`, names them in the prompt and
tells the user (`agent.error` warning `ATTACHMENT_NOT_DELIVERED`) — never silence.

A kind starts its processes with `self.processes.spawn` and ends them with
`self.processes.terminate` (or `reap` for one that ends by itself), so no agent outlives the
client and none is left unrecorded (client.processes.children).

Nothing that arrives over the network becomes a command line (§7.2): a kind builds its
command only from its `AgentSpec`, which comes from the agents file.
"""

from __future__ import annotations

import base64
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from client.agents.kinds import AgentEntry
from client.agents.modes import Models, Modes, no_modes
from client.files.attachments import DEFAULT_ATTACHMENTS_DIR, AttachmentRefused, save_attachment
from client.processes.children import AgentProcesses
from rawp.attachments import NOT_DELIVERED
from rawp.events import (
    CatalogTool,
    ConfigOption,
    InteractionResponse,
    StopReason,
    ToolInvokeRequest,
)
from rawp.fileref import Part, extract_paths, to_literal

Emit = Callable[[str, dict[str, Any]], Awaitable[None]]


async def _unheard() -> None:
    """`mode_changed` until a session listens (an agent made outside a session)."""


class ResumeRefused(Exception):
    """The agent cannot continue the conversation asked for (issue 30 §2)."""


async def _unrecorded(agent_session_id: str) -> None:
    """`conversation_known` until a session table listens (an agent made outside one)."""


@dataclass(frozen=True)
class AgentSpec:
    """One entry of the agents file."""

    name: str
    kind: str
    settings: AgentEntry  # the kind's own model, validated once (client.agents.kinds)
    description: str = ""
    is_active: bool = True
    tools: tuple[CatalogTool, ...] = ()
    # Where prompt attachments are saved, relative to the workspace (every kind, docs/agents.md).
    attachments_dir: str = DEFAULT_ATTACHMENTS_DIR


@dataclass(frozen=True)
class ImageAttachment:
    """An image of the prompt, for kinds that take images as content."""

    name: str
    mime_type: str  # the type its bytes really are (rawp.attachments.image_type)
    data: str  # base64, checked by the client (client.files.attachments.receive)


@dataclass(frozen=True)
class SavedAttachment:
    """An attachment saved in the workspace; its `path` is among the prompt's `files`."""

    name: str
    path: str  # workspace-relative
    mime_type: str


@dataclass(frozen=True)
class Prompt:
    """A prompt after §16.2 parsing and workspace validation, converted for one kind."""

    message_id: str
    text: str
    files: tuple[str, ...]  # workspace-relative paths, confined and existing
    input_type: str = "text"
    context_files: tuple[str, ...] = ()  # `context_files` of the request, confined, existing
    images: tuple[ImageAttachment, ...] = ()
    attachments: tuple[SavedAttachment, ...] = ()


@dataclass(frozen=True)
class Reference:
    """A validated `file_references` entry: `path` is None when it cannot be used."""

    ref_id: str
    display_path: str
    path: str | None


class Agent(ABC):
    kind: str = ""

    def __init__(
        self,
        spec: AgentSpec,
        *,
        workspace: Path,
        session_id: str,
        emit: Emit,
        kill_grace: float,
        processes: AgentProcesses | None = None,
    ) -> None:
        self.spec = spec
        self.workspace = workspace
        self.session_id = session_id
        self.emit = emit
        self.kill_grace = kill_grace
        # Every process a kind starts goes through here: supervised and recorded
        # (client.processes.children).
        self.processes = processes or AgentProcesses()
        # Called after every change of mode; the session sets it to announce the change.
        self.mode_changed: Callable[[], Awaitable[None]] = _unheard
        # Issue 30 §2 (client.sessions.resumes): called with the agent's own id of the
        # conversation whenever it learns one, so a later session can resume it.
        self.conversation_known: Callable[[str], Awaitable[None]] = _unrecorded
        self.resume_from: str | None = None
        self.fork = False

    # Kinds that can continue an earlier conversation of theirs (they read `resume_from`), and
    # those that can continue a copy of it under a new id (they read `fork`).
    resumable = False
    forkable = False

    def resume(self, agent_session_id: str, fork: bool = False) -> None:
        """Before `start`: continue the conversation the agent knows by this id (with `fork`, a
        copy of it); the kind takes it (and clears it) when it starts its first process."""
        if not self.resumable or (fork and not self.forkable):
            raise NotImplementedError(f"the {self.spec.kind} kind cannot do that")
        self.resume_from = agent_session_id
        self.fork = fork

    async def start(self) -> None:  # noqa: B027 - most kinds have nothing to prepare
        """Prepare for the session's first prompt."""

    def convert(
        self,
        message_id: str,
        parts: Sequence[Part],
        references: Sequence[Reference],
        input_type: str,
    ) -> Prompt:
        """The prompt as this kind takes it. By default (DPS §16.3's script example) the text
        keeps each file token's display_path and the files travel beside it as paths; a kind
        that writes references into the text itself (Claude's @-mentions) overrides this."""
        files = extract_paths(parts, references).paths
        return Prompt(message_id, to_literal(parts), tuple(files), input_type)

    @abstractmethod
    async def prompt(self, prompt: Prompt) -> StopReason: ...

    @abstractmethod
    async def cancel(self) -> None: ...

    @abstractmethod
    async def respond(self, response: InteractionResponse) -> None: ...

    def catalog(self) -> list[CatalogTool]:
        return list(self.spec.tools)

    # --- modes (client.agents.modes) ----------------------------------------------------------

    def modes(self) -> Modes | None:
        """The modes this agent offers and its current one; None when it has none."""
        return None

    async def set_mode(self, mode: str) -> None:
        """Switch to `mode`; raises ModeRefused (a kind without modes always does)."""
        raise no_modes(f"agent {self.spec.name!r} ({self.kind or 'script'})")

    def models(self) -> Models | None:
        """The models this agent offers and its current one; None when it has none."""
        return None

    async def set_model(self, model: str) -> None:
        """Switch to `model` (`control.model.set`); raises ModeRefused like `set_mode`."""
        raise no_modes(f"agent {self.spec.name!r} ({self.kind or 'script'})", "models")

    def config_options(self) -> list[ConfigOption] | None:
        """The agent's session config options (ACP); None when it has none."""
        return None

    async def set_config(self, config_id: str, value: str) -> None:
        """Set one config option (`control.config.set`); raises ModeRefused like `set_mode`."""
        raise no_modes(f"agent {self.spec.name!r} ({self.kind or 'script'})", "config options")

    # --- attachments ---------------------------------------------------------------------------

    def image_types(self) -> frozenset[str]:
        """The image types this agent takes as image content (ACP: known once it started)."""
        return frozenset()

    async def fatal(self, code: str, message: str) -> None:
        """An error that ends what the agent was doing: not retryable (DPS `agent.error`)."""
        await self.emit(
            "agent.error",
            {"code": code, "message": message, "severity": "fatal", "retryable": False},
        )

    async def not_delivered(self, name: str, why: str) -> None:
        """Tell the user an attachment did not reach the agent as sent (never silence)."""
        await self.emit(
            "agent.error",
            {
                "code": NOT_DELIVERED,
                "message": f"{name} was not delivered: {why}",
                "severity": "warning",
            },
        )

    async def images_as_files(self, prompt: Prompt) -> Prompt:
        """`prompt` with the images this agent cannot take saved as files in the workspace,
        their paths among its `files` and named at the end of its text, each one reported."""
        taken = self.image_types()
        kept = tuple(image for image in prompt.images if image.mime_type in taken)
        if len(kept) == len(prompt.images):
            return prompt
        saved: list[SavedAttachment] = []
        for image in prompt.images:
            if image.mime_type in taken:
                continue
            try:
                raw = base64.b64decode(image.data)
                path = save_attachment(self.workspace, self.spec.attachments_dir, image.name, raw)
            except AttachmentRefused as exc:
                await self.not_delivered(image.name, exc.message)
                continue
            saved.append(SavedAttachment(image.name, path, image.mime_type))
            await self.not_delivered(
                image.name, f"this agent takes no images; it was saved as {path} instead"
            )
        paths = tuple(s.path for s in saved)
        named = "Attached: " + ", ".join(paths)
        return replace(
            prompt,
            text=f"{prompt.text}\n\n{named}" if prompt.text.strip() else named,
            files=prompt.files + paths,
            images=kept,
            attachments=prompt.attachments + tuple(saved),
        )

    async def invoke_tool(self, request: ToolInvokeRequest) -> dict[str, Any]:
        """Run a direct tool; the base kind has none (the session refuses before this)."""
        return {
            "invocation_id": request.invocation_id,
            "tool_name": request.tool_name,
            "status": "error",
            "output_type": "empty",
            "error": {"code": "TOOL_NOT_SUPPORTED", "message": "this agent runs no direct tools"},
        }

    @abstractmethod
    async def close(self) -> None: ...
