"""Payload models for every RAWP-DPS 1.0 event this project speaks (dps-profile §3–§9).

Each model ignores keys it does not know (RAWP §1.3, X-COMP-01). `EVENTS` maps a frame `type`
to its payload model and its direction; a `type` missing from it is not an error — relays
forward it and endpoints ignore it (dps-profile §1).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt

from rawp.fileref import escape


class Payload(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class Direction(StrEnum):
    """Who sends an event (dps-profile §2)."""

    AGENT_TO_EDGE = "agent → edge"
    EDGE_TO_AGENT = "edge → agent"
    BOTH = "either way"
    MASTER_TO_EDGE = "master → edge"


AgentState = Literal["idle", "thinking", "tool_calling", "awaiting_input", "error"]
TaskStatus = Literal["pending", "in_progress", "completed", "cancelled"]

# --- agent.* (DPS §4) -----------------------------------------------------------------------


class TextDelta(Payload):
    content_index: NonNegativeInt
    text: str


class TextDone(Payload):
    content_index: NonNegativeInt
    text: str


class ThinkingDelta(Payload):
    content_index: NonNegativeInt
    text: str


class ThinkingDone(Payload):
    content_index: NonNegativeInt
    redacted: bool = False
    duration_ms: NonNegativeInt | None = None


class StateChanged(Payload):
    previous_state: AgentState | None = None
    current_state: AgentState


class InteractionOption(Payload):
    option_id: str
    label: str
    kind: Literal["allow_once", "allow_always", "reject_once", "reject_always"] | None = None


class InteractionRequest(Payload):
    interaction_id: str
    kind: Literal["approval", "choice", "input"]
    prompt: str
    options: list[InteractionOption] = Field(default_factory=list)
    invocation_id: str | None = None
    timeout_s: float | None = Field(default=None, gt=0)


class AgentError(Payload):
    code: str
    message: str
    severity: Literal["warning", "error", "fatal"]
    retryable: bool | None = None


class AgentFile(Payload):
    file_id: str
    name: str
    mime_type: str
    size_bytes: NonNegativeInt
    data: str  # base64 of this chunk
    chunk_index: NonNegativeInt
    final: bool


class CommandParameter(Payload):
    name: str
    description: str | None = None
    required: bool = False


class Command(Payload):
    name: str
    description: str = ""
    category: str | None = None
    parameters: list[CommandParameter] = Field(default_factory=list)


class CommandsPublish(Payload):
    commands: list[Command]


class PlanEntry(Payload):
    content: str
    status: TaskStatus
    priority: str | None = None


class PlanUpdated(Payload):
    entries: list[PlanEntry]


# --- tool.* (DPS §5, §8, §15) ---------------------------------------------------------------

ToolCategory = Literal["read", "edit", "execute", "search", "fetch", "think", "delegate", "other"]
OutputType = Literal[
    "text",
    "diff",
    "file_content",
    "file_list",
    "web_content",
    "structured",
    "empty",
    "agent_result",
]


class CatalogTool(Payload):
    name: str
    description: str = ""
    category: ToolCategory = "other"
    direct: bool = False


class ToolCatalogPublish(Payload):
    tools: list[CatalogTool]


class ToolInvokeRequest(Payload):
    invocation_id: str
    tool_name: str
    input: dict[str, Any] = Field(default_factory=dict)
    title: str | None = None
    parallel_group_id: str | None = None
    parent_invocation_id: str | None = None


class ToolInvokeStream(Payload):
    invocation_id: str
    stream: Literal["stdout", "stderr", "progress"]
    text: str
    mode: Literal["append", "replace"] = "append"


class ToolError(Payload):
    code: str
    message: str | None = None


class ToolInvokeResult(Payload):
    invocation_id: str
    tool_name: str
    status: Literal["success", "error", "timeout", "cancelled"]
    output_type: OutputType
    output: Any = None
    duration_ms: NonNegativeInt | None = None
    error: ToolError | None = None


class Task(Payload):
    """One entry of a task list, carried as `structured` output `{tasks: [...]}` (DPS §8)."""

    id: str
    content: str
    status: TaskStatus
    parent_id: str | None = None


# --- control.* (DPS §6, §16.1) --------------------------------------------------------------


class FileReference(Payload):
    ref_id: str = Field(pattern=r"^[a-zA-Z0-9_-]+$")
    path: str
    display_path: str | None = None
    name: str | None = None
    size_bytes: NonNegativeInt | None = None
    mime_type: str | None = None


class ContextFile(Payload):
    path: str


class Attachment(Payload):
    name: str
    mime_type: str
    data: str  # base64


class PromptRequest(Payload):
    prompt_text: str
    # `text` and `slash_command` are the values the spec names; others pass through.
    input_type: str = "text"
    file_references: list[FileReference] = Field(default_factory=list)
    context_files: list[ContextFile] = Field(default_factory=list)
    tool_overrides: list[str] | None = None
    attachments: list[Attachment] | None = None


class PromptCancel(Payload):
    turn_id: str | None = None


class InteractionResponse(Payload):
    interaction_id: str
    option_id: str | None = None
    text: str | None = None


class ContextCompact(Payload):
    instructions: str | None = None

    def as_prompt(self) -> PromptRequest:
        """What compaction runs as (docs/protocol.md, `control.context.compact`): the agent's
        own `compact` command with the instructions, a slash-command prompt. The master checks
        it as that prompt (command deny lists, budgets); the client runs it as one."""
        text = f"/compact {self.instructions or ''}".strip()
        return PromptRequest(prompt_text=escape(text), input_type="slash_command")


class ModeSet(Payload):
    mode: str


class ModelSet(Payload):
    """`control.model.set` (issue 30 §1, a RAWP extension beside DPS §6 `control.mode.set`):
    the id of one of the models `session.capabilities` lists (docs/protocol.md "agent models")."""

    model: str


class ConfigSet(Payload):
    """`control.config.set` (issue 30 §1): one of the agent's `config_options` (ACP session
    config options) to the value `value` names (docs/protocol.md "agent models")."""

    config_id: str
    value: str


class SearchFilters(Payload):
    extensions: list[str] | None = None
    exclude_patterns: list[str] | None = None


class FileSearch(Payload):
    query_id: str
    query: str
    scope: Literal["workspace", "project", "global"] = "workspace"
    # DPS §16.1.1: default 20, maximum 50; larger values are clamped by the client.
    max_results: int = Field(default=20, ge=1)
    filters: SearchFilters | None = None


class FileSearchCancel(Payload):
    query_id: str


# --- session.* (DPS §7, §12, §16.1.2) -------------------------------------------------------


class TurnStart(Payload):
    turn_id: str
    prompt_message_id: str


StopReason = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled", "error"]


class TurnEnd(Payload):
    turn_id: str
    stop_reason: StopReason
    duration_ms: NonNegativeInt = 0


class Usage(Payload):
    input_tokens: NonNegativeInt = 0
    output_tokens: NonNegativeInt = 0
    cache_read_tokens: NonNegativeInt | None = None
    cache_write_tokens: NonNegativeInt | None = None
    reasoning_tokens: NonNegativeInt | None = None
    tool_invocations: NonNegativeInt | None = None
    cost_usd: float | None = Field(default=None, ge=0)
    estimated: bool | None = None
    # Extension fields (issue 16 §4): the model's context in use after the turn, and its size,
    # where the agent reports them; the gateway's usage footer shows them.
    context_tokens: NonNegativeInt | None = None
    context_window: NonNegativeInt | None = None


class ContextCompacted(Payload):
    before_tokens: NonNegativeInt | None = None
    after_tokens: NonNegativeInt | None = None
    summary: str | None = None


class FileReferenceCapability(Payload):
    search: bool = True
    max_results: int = 50
    scopes: list[str] = Field(default_factory=lambda: ["workspace", "project", "global"])


class SecretFingerprints(Payload):
    """Keyed hashes of the workspace's `.env` values (issue 15 §3, rawp.fingerprints): what
    lets an edge redact them before chat without ever learning them. An extension field; an
    edge that does not know it ignores it."""

    salt: str
    lengths: list[int] = Field(default_factory=list)
    hashes: list[str] = Field(default_factory=list)


class ModeOption(Payload):
    """One mode an agent offers for `control.mode.set` (issue 30 §1, an extension field)."""

    id: str  # what `control.mode.set`'s `mode` names
    name: str
    description: str | None = None


class ModelOption(Payload):
    """One model an agent offers for `control.model.set` (issue 30 §1, an extension field)."""

    id: str  # what `control.model.set`'s `model` names
    name: str
    description: str | None = None


class ConfigValue(Payload):
    value: str  # what `control.config.set`'s `value` names
    name: str
    description: str | None = None


class ConfigOption(Payload):
    """One ACP session config option (a select), as the agent offers it (issue 30 §1)."""

    id: str  # what `control.config.set`'s `config_id` names
    name: str
    description: str | None = None
    category: str | None = None  # ACP's: mode, model, thought_level, … (display only)
    current_value: str
    options: list[ConfigValue] = Field(default_factory=list)


class Capabilities(Payload):
    protocol: str = "rawp-dps-1.0"
    events: list[str] = Field(default_factory=list)
    file_reference: FileReferenceCapability = Field(default_factory=FileReferenceCapability)
    input_types: list[str] = Field(default_factory=lambda: ["text", "slash_command"])
    tools_direct: bool = False
    secret_fingerprints: SecretFingerprints | None = None
    # Extension fields (issue 30 §1, docs/protocol.md): the modes the agent offers and the one
    # it is in; absent for an agent without modes (or an ACP agent not started yet). A mode
    # change is announced by a new `session.capabilities`.
    modes: list[ModeOption] | None = None
    current_mode: str | None = None
    # The same for models (`control.model.set`) and, for an ACP agent, its session config
    # options (`control.config.set`); absent where the agent offers none.
    models: list[ModelOption] | None = None
    current_model: str | None = None
    config_options: list[ConfigOption] | None = None


class History(Payload):
    since_message_id: str | None = None
    replayed: NonNegativeInt
    dropped: NonNegativeInt = 0
    policy: Literal["RING", "DROP"] = "RING"


class BudgetState(Payload):
    """Which budget a `BUDGET_EXCEEDED` / `BUDGET_WARNING` is about (issue 16 §4, an extension
    field of `session.error`; master.edge.usage.budgets rule 5)."""

    name: str  # cost_per_day / cost_per_month / tokens_per_session
    scope: str  # user / node
    limit: float
    spent: float
    resets_at: str | None = None  # ISO 8601; None: with a new session


class SessionError(Payload):
    code: str
    message: str
    ref_message_id: str | None = None
    budget: BudgetState | None = None


class MatchRange(Payload):
    # indexes into `path`, in code points, `end` exclusive.
    start: NonNegativeInt
    end: NonNegativeInt


class FileCandidate(Payload):
    path: str
    name: str
    directory: str
    extension: str | None = None
    mime_type: str | None = None
    size_bytes: NonNegativeInt | None = None
    modified_at: str | None = None
    match_score: float | None = Field(default=None, ge=0.0, le=1.0)
    match_ranges: list[MatchRange] | None = None


class FileCandidates(Payload):
    query_id: str
    candidates: list[FileCandidate]
    total_count: NonNegativeInt | None = None
    truncated: bool


# --- node.* (RAWP §9.4.4) -------------------------------------------------------------------


class NodeConfigChanged(Payload):
    node_id: str
    changed_scope: Literal["limits", "capabilities"]
    config_version: int = Field(ge=1)
    reason: str | None = None


# --- the catalogue --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EventSpec:
    type: str
    model: type[Payload]
    direction: Direction
    section: str  # where the event is defined
    session_scoped: bool = True  # False only for node.* frames, which carry no session_id


_A, _E, _B, _M = (
    Direction.AGENT_TO_EDGE,
    Direction.EDGE_TO_AGENT,
    Direction.BOTH,
    Direction.MASTER_TO_EDGE,
)

EVENTS: dict[str, EventSpec] = {
    spec.type: spec
    for spec in (
        EventSpec("agent.text.delta", TextDelta, _A, "DPS §4"),
        EventSpec("agent.text.done", TextDone, _A, "DPS §4"),
        EventSpec("agent.thinking.delta", ThinkingDelta, _A, "DPS §4"),
        EventSpec("agent.thinking.done", ThinkingDone, _A, "DPS §4"),
        EventSpec("agent.state.changed", StateChanged, _A, "DPS §4.6.1"),
        EventSpec("agent.interaction.request", InteractionRequest, _A, "DPS §4"),
        EventSpec("agent.error", AgentError, _A, "DPS §4"),
        EventSpec("agent.file", AgentFile, _A, "DPS §4"),
        EventSpec("agent.commands.publish", CommandsPublish, _A, "DPS §12.1.1"),
        EventSpec("agent.plan.updated", PlanUpdated, _A, "DPS §9"),
        EventSpec("tool.catalog.publish", ToolCatalogPublish, _A, "DPS §5"),
        EventSpec("tool.invoke.request", ToolInvokeRequest, _B, "DPS §5, §15"),
        EventSpec("tool.invoke.stream", ToolInvokeStream, _A, "DPS §5"),
        EventSpec("tool.invoke.result", ToolInvokeResult, _A, "DPS §5, §8"),
        EventSpec("control.prompt.request", PromptRequest, _E, "DPS §6.1.1, §16.4"),
        EventSpec("control.prompt.cancel", PromptCancel, _E, "DPS §6"),
        EventSpec("control.interaction.response", InteractionResponse, _E, "DPS §6"),
        EventSpec("control.context.compact", ContextCompact, _E, "DPS §6"),
        EventSpec("control.mode.set", ModeSet, _E, "DPS §6"),
        EventSpec("control.model.set", ModelSet, _E, "issue 30 §1, docs/protocol.md"),
        EventSpec("control.config.set", ConfigSet, _E, "issue 30 §1, docs/protocol.md"),
        EventSpec("control.file.search", FileSearch, _E, "DPS §16.1.1"),
        EventSpec("control.file.search.cancel", FileSearchCancel, _E, "DPS §16.1.3"),
        EventSpec("session.turn.start", TurnStart, _A, "DPS §7"),
        EventSpec("session.turn.end", TurnEnd, _A, "DPS §7"),
        EventSpec("session.usage", Usage, _A, "DPS §7, RAWP §9.4.2"),
        EventSpec("session.context.compacted", ContextCompacted, _A, "DPS §7"),
        EventSpec("session.capabilities", Capabilities, _A, "DPS §12.2.1, §16.5"),
        EventSpec("session.history", History, _A, "DPS §7, RAWP §5.1"),
        EventSpec("session.error", SessionError, _B, "DPS §7, RAWP §9.4.2"),
        EventSpec("session.file.candidates", FileCandidates, _A, "DPS §16.1.2"),
        EventSpec("node.config.changed", NodeConfigChanged, _M, "RAWP §9.4.4", False),
    )
}
