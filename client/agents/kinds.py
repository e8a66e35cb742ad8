"""The agents file's `[agents.NAME]` tables: one pydantic model per agent kind.

Each table is validated once, against its kind's model, when the file is loaded; the kind then
reads typed attributes (`spec.settings.command`), never the raw table. A wrong value is refused
with one line naming the agent, the field and what the field accepts
(`agents file agents.toml: [agents.coder] command: expected …, got 'ls'`). Keys a kind does not
know are ignored, as they always were. This module imports nothing heavy: `rawp up` loads the
file without importing the kinds' client libraries. docs/agents.md describes the fields.
"""

from __future__ import annotations

import shlex
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
)

from client.files.attachments import DEFAULT_ATTACHMENTS_DIR, check_attachments_dir
from rawp.events import CatalogTool

SCRIPT_MODES = ("plain", "jsonl")
FILE_MODES = ("reference", "inline")
PRICE_KEYS = ("input", "output", "cached_input")


def _split(value: Any) -> Any:
    # A script's `command` may be one string, split like a shell would (never run by one).
    return shlex.split(value) if isinstance(value, str) else value


def _accepts(text: str, default: Any = None, **kwargs: Any) -> Any:
    """A field whose `description` is what it accepts: the error line quotes it."""
    if "default_factory" in kwargs:
        return Field(description=text, **kwargs)
    return Field(default, description=text, **kwargs)


NonEmpty = Annotated[str, Field(min_length=1)]
Argv = Annotated[list[NonEmpty], Field(min_length=1)]
Env = dict[str, str]
ENV = "a table of strings"


class AgentEntry(BaseModel):
    """The fields every kind has."""

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)

    kind: str
    description: str = _accepts("a string", "")
    active: bool = _accepts("true or false", True)
    attachments_dir: str = _accepts(
        "a non-empty path relative to the workspace, without `..`", DEFAULT_ATTACHMENTS_DIR
    )
    tools: tuple[CatalogTool, ...] = _accepts(
        "a list of tables with name, description and category", ()
    )
    # Issue 30 §3: every session of this agent works in its own git worktree.
    worktree: bool = _accepts("true or false", False)

    @field_validator("attachments_dir")
    @classmethod
    def _confined(cls, value: str) -> str:
        try:
            return check_attachments_dir(value)
        except ValueError:
            raise ValueError(
                "expected a non-empty path relative to the workspace, without `..` (e.g. "
                f"{DEFAULT_ATTACHMENTS_DIR!r}), got {value!r}"
            ) from None

    @field_validator("tools", mode="before")
    @classmethod
    def _tools(cls, value: Any) -> Any:
        if not isinstance(value, list) or not all(isinstance(t, dict) for t in value):
            raise ValueError("expected a list of tables with name, description and category")
        # An agent's configured tools are never direct: only the edge runs a direct tool.
        return tuple(CatalogTool.model_validate({**t, "direct": False}) for t in value)


class ScriptSettings(AgentEntry):
    kind: Literal["script"] = "script"
    command: Annotated[Argv, BeforeValidator(_split)] = _accepts(
        "a non-empty list of strings (or one string)", ...
    )
    mode: Literal["plain", "jsonl"] = _accepts(f"one of {', '.join(SCRIPT_MODES)}", "plain")
    env: Env = _accepts(ENV, default_factory=dict)


class ClaudeCodeSettings(AgentEntry):
    kind: Literal["claude-code"] = "claude-code"
    command: Argv = _accepts("a non-empty list of strings", default_factory=lambda: ["claude"])
    model: str | None = _accepts("a string")
    # The models chat may choose (issue 30 §1): the CLI takes these aliases (or full ids) in
    # `--model` and `set_model`, but lists none, so the agents file names them.
    models: list[str] = _accepts(
        "a list of model names", default_factory=lambda: ["sonnet", "opus", "haiku"]
    )
    permission_mode: str | None = _accepts("a string")
    append_system_prompt: str | None = _accepts("a string")
    max_turns: int | None = _accepts("a whole number")
    allowed_tools: list[str] = _accepts("a list of tool names", default_factory=list)
    disallowed_tools: list[str] = _accepts("a list of tool names", default_factory=list)
    env: Env = _accepts(ENV, default_factory=dict)
    startup_timeout: float = _accepts("a number of seconds", 60.0)


class AcpSettings(AgentEntry):
    kind: Literal["acp"] = "acp"
    command: Argv = _accepts("a non-empty list of strings (the agent's argv)", ...)
    install_hint: str | None = _accepts("a string")
    env: Env = _accepts(ENV, default_factory=dict)
    startup_timeout: float = _accepts("a number of seconds", 60.0)


class OpenAISettings(AgentEntry):
    kind: Literal["openai"] = "openai"
    base_url: NonEmpty = _accepts("a URL starting with http:// or https://", ...)
    model: NonEmpty = _accepts("a non-empty string", ...)
    api_key: Any = _accepts("nothing: name an environment variable in `api_key_env`")
    api_key_env: str | None = _accepts("the name of an environment variable")
    system_prompt: str | None = _accepts("a string")
    images: bool = _accepts("true or false", True)
    files: Literal["reference", "inline"] = _accepts(f"one of {', '.join(FILE_MODES)}", "reference")
    inline_max_bytes: int = _accepts("a whole number of bytes", 64 * 1024)
    temperature: float | None = _accepts("a number")
    max_tokens: int | None = _accepts("a whole number")
    timeout: float = _accepts("a number of seconds", 300.0)
    prices: dict[Literal["input", "output", "cached_input"], Annotated[float, Field(ge=0)]] = (
        _accepts(
            f"a table of {', '.join(PRICE_KEYS)} (USD per 1M tokens, zero or more)",
            default_factory=dict,
        )
    )

    @field_validator("base_url")
    @classmethod
    def _http(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"expected a URL starting with http:// or https://, got {value!r}")
        return value

    @field_validator("api_key")
    @classmethod
    def _no_key(cls, value: Any) -> Any:
        raise ValueError("write the key in an environment variable and name it in `api_key_env`")


KIND_MODELS: dict[str, type[AgentEntry]] = {
    "script": ScriptSettings,
    "openai": OpenAISettings,
    "claude-code": ClaudeCodeSettings,
    "acp": AcpSettings,
}


def kind_settings(kind: str, table: dict[str, Any]) -> AgentEntry:
    """Validate one `[agents.NAME]` table against its kind's model; `ValueError` names the
    field and what it accepts, in one line."""
    model = KIND_MODELS[kind]
    try:
        return model.model_validate({**table, "kind": kind})
    except ValidationError as exc:
        raise ValueError(one_line(model, table, exc)) from None


def one_line(model: type[BaseModel], table: dict[str, Any], exc: ValidationError) -> str:
    error = exc.errors()[0]
    field = str(error["loc"][0]) if error["loc"] else ""
    info = model.model_fields.get(field)
    accepts = info.description if info is not None and info.description else "another value"
    if error["type"] == "value_error":  # our own validators say what they accept
        return f"{field}: {str(error['msg']).removeprefix('Value error, ')}"
    if error["type"] == "missing":
        return f"{field}: missing, expected {accepts}"
    got = repr(table.get(field))
    return f"{field}: expected {accepts}, got {got if len(got) <= 80 else got[:77] + '...'}"
