"""Agent modes, models and config options from chat (issue 30 §1): what an agent offers for
`control.mode.set`, `control.model.set` and `control.config.set`, how a requested one is
matched, and how an ACP agent's are read and set (`AcpChoices`, mixed into the `acp` kind).

A kind that has modes answers `Agent.modes()` with a `Modes` and changes them in
`Agent.set_mode`; models likewise (`Agent.models()` a `Models`, `Agent.set_model`); a request
it cannot honour raises `ModeRefused`, which the session's socket turns into `session.error`
with the refusal's code and message (never silence).

Edges send the Claude Code ids (`default`, `acceptEdits`, `plan`) whatever the kind, so an
ACP agent's mode is matched by id first and then by name with case, spaces and punctuation
ignored: `acceptEdits` finds an ACP mode named "Accept Edits", `default` one with id `default`.
A model is matched the same way (`opus` finds a model named "Opus").

ACP (agentclientprotocol.com, "Session Modes", "Session Config Options", and the unstable
"models"): the `session/new` (or `session/load`) answer may carry `modes`
(`{availableModes, currentModeId}`, set with `session/set_mode`), `models`
(`{availableModels: [{modelId, name, description?}], currentModelId}`, set with
`session/set_model`) and `configOptions` (`[{id, name, description?, category?, type:
"select", currentValue, options}]`, set with `session/set_config_option` `{configId, value}`,
whose answer is the whole new list; the agent announces its own changes with
`config_option_update`). A config option of category `model` is the agent's model choice and
takes the place of `models` (the spec prefers config options). The Python ACP SDK reads the
`session/new` answer into a model without `models` and has no `session/set_model`, so those
two go as plain JSON-RPC requests on the SDK's connection (`raw_request`).
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from typing import Any, ClassVar

from acp import RequestError

from rawp.events import ConfigOption, ConfigValue, ModelOption, ModeOption

# Claude Code's permission modes that chat may choose. `bypassPermissions` is offered only
# when the agents file already starts the CLI in it: chat never widens what the owner allowed.
CLAUDE_MODES = (
    ModeOption(id="default", name="Ask before edits"),
    ModeOption(id="acceptEdits", name="Accept edits"),
    ModeOption(id="plan", name="Plan"),
)
CLAUDE_BYPASS = ModeOption(id="bypassPermissions", name="Bypass permissions")


class ModeRefused(Exception):
    """A `control.mode.set` (or `.model.set`, `.config.set`) the agent cannot honour: `code`
    and `message` go to the edge."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Modes:
    available: tuple[Any, ...]  # ModeOption (ModelOption for `Models`)
    current: str | None
    noun: ClassVar[str] = "mode"

    def resolve(self, requested: str) -> str:
        """The id of the offered choice `requested` names; ModeRefused when none does."""
        for option in self.available:
            if option.id == requested:
                return option.id
        wanted = _plain(requested)
        for option in self.available:
            if wanted and wanted in (_plain(option.id), _plain(option.name)):
                return option.id
        offered = ", ".join(option.id for option in self.available)
        raise ModeRefused(
            f"INVALID_{self.noun.upper()}",
            f"unknown {self.noun} {requested!r}; this agent offers {offered}",
        )


@dataclass(frozen=True)
class Models(Modes):
    noun: ClassVar[str] = "model"


def no_modes(what: str, noun: str = "modes") -> ModeRefused:
    return ModeRefused("UNSUPPORTED_CONTROL", f"{what} has no {noun} to choose from")


def _plain(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def set_permission_mode(mode: str) -> dict[str, Any]:
    """The control request that switches the running CLI's permission mode (the request the
    agent SDK's `setPermissionMode` sends)."""
    return {"subtype": "set_permission_mode", "mode": mode}


def set_model(model: str) -> dict[str, Any]:
    """The control request that switches the running CLI's model (the request the agent
    SDK's `setModel` sends); later turns' API requests name it."""
    return {"subtype": "set_model", "model": model}


class ClaudeChoices:
    """The permission modes and models of the `claude-code` kind, for `ClaudeCodeAgent`: a
    running CLI is told with a control request (`set_permission_mode`, `set_model`), a CLI
    started later gets `--permission-mode` and `--model` (claude_wire `cli_argv`)."""

    # Provided by ClaudeCodeAgent.
    settings: Any
    mode_changed: Any
    _proc: Any
    _control: Any
    _mode: str | None
    _model: str | None

    def modes(self) -> Modes:
        available = CLAUDE_MODES
        configured = self.settings.permission_mode
        if configured and configured not in {mode.id for mode in available}:
            available += (ModeOption(id=configured, name=configured),)
        return Modes(available, self._mode or "default")

    async def set_mode(self, mode: str) -> None:
        chosen = self.modes().resolve(mode)
        await self._tell_cli(set_permission_mode(chosen), "MODE_NOT_SET", f"the mode {chosen!r}")
        self._mode = chosen  # a CLI started later gets it as --permission-mode
        await self.mode_changed()

    def models(self) -> Models:
        """The agents file's `models`, and its `model` when that is another."""
        names = list(self.settings.models)
        if self.settings.model and self.settings.model not in names:
            names.append(self.settings.model)
        return Models(tuple(ModelOption(id=name, name=name) for name in names), self._model)

    async def set_model(self, model: str) -> None:
        chosen = self.models().resolve(model)
        await self._tell_cli(set_model(chosen), "MODEL_NOT_SET", f"the model {chosen!r}")
        self._model = chosen  # a CLI started later gets it as --model
        await self.mode_changed()

    async def _tell_cli(self, request: dict[str, Any], code: str, what: str) -> None:
        """A control request to the running CLI, if one runs; ModeRefused when unanswered."""
        proc = self._proc
        if proc is None or proc.returncode is not None:
            return
        try:
            await asyncio.wait_for(self._control(request), self.settings.startup_timeout)
        except (TimeoutError, ConnectionError) as exc:
            why = str(exc) or "no answer"
            raise ModeRefused(code, f"Claude Code did not take {what}: {why}") from None


# --- ACP ----------------------------------------------------------------------------------


async def raw_request(conn: Any, method: str, params: dict[str, Any]) -> Any:
    """A JSON-RPC request on the SDK's connection, answered as the agent sent it (see above)."""
    return await conn._conn.send_request(method, params)


def acp_models(state: Any) -> Models | None:
    """`models` of a `session/new` answer, or None."""
    if not isinstance(state, dict) or not isinstance(state.get("availableModels"), list):
        return None
    offered = tuple(
        ModelOption(
            id=m["modelId"], name=m.get("name") or m["modelId"], description=m.get("description")
        )
        for m in state["availableModels"]
        if isinstance(m, dict) and isinstance(m.get("modelId"), str)
    )
    return Models(offered, state.get("currentModelId")) if offered else None


def acp_config(options: Any) -> tuple[ConfigOption, ...]:
    """The select options of `configOptions` (ACP objects or dicts), groups flattened."""
    found = []
    for raw in options or []:
        item = raw if isinstance(raw, dict) else raw.model_dump(by_alias=True, mode="json")
        if item.get("type") != "select" or not isinstance(item.get("currentValue"), str):
            continue  # boolean options are not offered to chat (we do not advertise them)
        values = []
        for entry in item.get("options") or []:
            for value in entry.get("options", [entry]) if isinstance(entry, dict) else []:
                values.append(
                    ConfigValue(
                        value=value["value"],
                        name=value.get("name") or value["value"],
                        description=value.get("description"),
                    )
                )
        category = item.get("category")
        found.append(
            ConfigOption(
                id=item["id"],
                name=item.get("name") or item["id"],
                description=item.get("description"),
                category=category if isinstance(category, str) else None,
                current_value=item["currentValue"],
                options=values,
            )
        )
    return tuple(found)


def config_models(options: tuple[ConfigOption, ...]) -> tuple[str, Models] | None:
    """The config option of category `model` as (its id, the models it offers), or None."""
    for option in options:
        if option.category == "model":
            offered = tuple(
                ModelOption(id=v.value, name=v.name, description=v.description)
                for v in option.options
            )
            return option.id, Models(offered, option.current_value)
    return None


class AcpChoices:
    """The modes, models and config options of the running ACP session, for `AcpAgent`.

    What chat chose is kept (`_chosen_*`) and set again on the session a restarted agent
    opens; every change — ours or the agent's own — is announced (`mode_changed`, which the
    session answers with a new `session.capabilities`)."""

    # Provided by AcpAgent.
    _conn: Any
    _acp_session: str | None
    settings: Any
    spec: Any
    mode_changed: Any
    _until_exit: Any
    _ensure: Any

    def _init_choices(self) -> None:
        self._modes: Modes | None = None  # the running ACP session's, from session/new
        self._chosen_mode: str | None = None  # from chat; set again on a new ACP session
        self._models: Models | None = None
        self._model_config: str | None = None  # the config option that is the model, if any
        self._chosen_model: str | None = None
        self._config: tuple[ConfigOption, ...] = ()
        self._chosen_config: dict[str, str] = {}

    def modes(self) -> Modes | None:
        return self._modes

    def models(self) -> Models | None:
        return self._models

    def config_options(self) -> list[ConfigOption] | None:
        return list(self._config) or None

    def _take(self, answer: dict[str, Any]) -> None:
        """Read the modes, models and config options of a `session/new|load` answer."""
        state = answer.get("modes")
        self._modes = None
        if isinstance(state, dict) and isinstance(state.get("availableModes"), list):
            offered = tuple(
                ModeOption(
                    id=m["id"], name=m.get("name") or m["id"], description=m.get("description")
                )
                for m in state["availableModes"]
            )
            self._modes = Modes(offered, state.get("currentModeId"))
        self._models, self._model_config = acp_models(answer.get("models")), None
        self._take_config(answer.get("configOptions"))

    def _take_config(self, options: Any) -> None:
        self._config = acp_config(options)
        found = config_models(self._config)
        if found is not None:  # the spec prefers config options to `models`
            self._model_config, self._models = found

    async def _opened(self, answer: dict[str, Any]) -> str | None:
        """Take a new ACP session's choices, put the ones chosen from chat back, and announce
        them when the edges have not seen these yet."""
        known = (self._modes, self._models, self._config)
        self._take(answer)
        try:
            if self._modes and self._chosen_mode not in (None, self._modes.current):
                await self._switch(self._chosen_mode)
            if self._models and self._chosen_model not in (None, self._models.current):
                await self._switch_model(self._chosen_model)
            for config_id, value in self._chosen_config.items():
                await self._set_option(config_id, value)
        except ModeRefused as exc:
            return f"the ACP agent did not take what was chosen before: {exc.message}"
        if (self._modes, self._models, self._config) != known:
            await self.mode_changed()
        return None

    async def _started(self) -> None:
        problem = await self._ensure()
        if problem is not None:
            raise ModeRefused("AGENT_START_FAILED", problem)

    async def set_mode(self, mode: str) -> None:
        await self._started()
        if self._modes is None:
            raise no_modes(f"ACP agent {self.spec.name!r}")
        chosen = self._modes.resolve(mode)
        await self._switch(chosen)
        self._chosen_mode = chosen
        await self.mode_changed()

    async def set_model(self, model: str) -> None:
        await self._started()
        if self._models is None:
            raise no_modes(f"ACP agent {self.spec.name!r}", "models")
        chosen = self._models.resolve(model)
        await self._switch_model(chosen)
        self._chosen_model = chosen
        await self.mode_changed()

    async def set_config(self, config_id: str, value: str) -> None:
        await self._started()
        option = next((o for o in self._config if o.id == config_id), None)
        if option is None:
            offered = ", ".join(o.id for o in self._config) or "none"
            raise ModeRefused(
                "INVALID_CONFIG_OPTION",
                f"unknown config option {config_id!r}; this agent offers {offered}",
            )
        if value not in {v.value for v in option.options}:
            offered = ", ".join(v.value for v in option.options)
            raise ModeRefused(
                "INVALID_CONFIG_VALUE", f"{config_id} is one of {offered}, not {value!r}"
            )
        await self._set_option(config_id, value)
        self._chosen_config[config_id] = value
        await self.mode_changed()

    async def _ask(self, method: str, params: dict[str, Any], what: str) -> Any:
        assert self._conn is not None and self._acp_session is not None
        try:
            return await self._until_exit(
                raw_request(self._conn, method, {"sessionId": self._acp_session, **params}),
                self.settings.startup_timeout,
            )
        except (ConnectionError, RequestError, TimeoutError) as exc:
            code = "MODE_NOT_SET" if method == "session/set_mode" else "MODEL_NOT_SET"
            raise ModeRefused(code, f"the ACP agent did not take {what}: {exc}") from None

    async def _switch(self, mode_id: str) -> None:
        """`session/set_mode`; the change is the caller's to announce."""
        await self._ask("session/set_mode", {"modeId": mode_id}, f"the mode {mode_id!r}")
        assert self._modes is not None
        self._modes = Modes(self._modes.available, mode_id)

    async def _switch_model(self, model_id: str) -> None:
        """The model option (`session/set_config_option`), else `session/set_model`."""
        if self._model_config is not None:
            await self._set_option(self._model_config, model_id)
            return
        await self._ask("session/set_model", {"modelId": model_id}, f"the model {model_id!r}")
        assert self._models is not None
        self._models = Models(self._models.available, model_id)

    async def _set_option(self, config_id: str, value: str) -> None:
        answer = await self._ask(
            "session/set_config_option",
            {"configId": config_id, "value": value},
            f"{config_id} = {value!r}",
        )
        if isinstance(answer, dict) and isinstance(answer.get("configOptions"), list):
            self._take_config(answer["configOptions"])  # the whole new list
            return
        # An answer without the list: the value asked for is the one now.
        self._config = tuple(
            o.model_copy(update={"current_value": value}) if o.id == config_id else o
            for o in self._config
        )
        found = config_models(self._config)
        if found is not None:
            self._model_config, self._models = found

    async def mode_moved(self, mode_id: str) -> None:
        """The agent moved to `mode_id` by itself (`current_mode_update`)."""
        if self._modes is None or self._modes.current == mode_id:
            return
        self._modes = Modes(self._modes.available, mode_id)
        await self.mode_changed()

    async def config_moved(self, options: Any) -> None:
        """The agent changed its config options by itself (`config_option_update`)."""
        known = (self._models, self._config)
        self._take_config(options)
        if (self._models, self._config) != known:
            await self.mode_changed()
