"""The `acp` agent kind: any agent that speaks the Agent Client Protocol over stdio.

Gemini CLI (`gemini --experimental-acp`), the Claude Code and Codex ACP adapters, … The
agents file names the command (`command`, argv), optional `env` and an `install_hint` shown
when the command is missing. The `agent-client-protocol` package is the client side:

* first prompt: the agent is started in the workspace (its own process group), `initialize`
  (we offer `fs.readTextFile`/`fs.writeTextFile`, no terminal), then `session/new` with the
  workspace as `cwd`;
* each prompt: `session/prompt` with a text block and one `resource_link` per referenced file
  (DPS §16.3; the token's place keeps its `display_path`, A-32), plus one `image` block per
  prompt image when the agent advertised `promptCapabilities.image` in its `initialize`
  answer (otherwise the image is saved as a file, linked, and the user told); `session/update`
  notifications become DPS events (`acp_updates`); the answer's `stopReason` ends the turn;
* `session/request_permission` → `agent.interaction.request` with the agent's own options;
  the user's choice goes back as `selected`, a cancel as `cancelled`;
* `control.mode.set` → `session/set_mode` with the `modeId` of one of the `availableModes`
  the agent listed in its `session/new` answer (matched by id or name, client.agents.modes);
  an agent not running yet is started for it. The chosen mode is set again on the session a
  restarted agent opens, and a `current_mode_update` from the agent is announced like a
  change we made; `control.model.set` and `control.config.set` likewise, with the agent's
  `models` (`session/set_model`) or `configOptions` (`session/set_config_option`), all in
  client.agents.modes (`AcpChoices`);
* `control.prompt.cancel` → `session/cancel`; an agent that does not answer within the grace
  period is ended (SIGTERM, SIGKILL);
* `fs/read_text_file` and `fs/write_text_file` are served only inside the workspace (§7.2,
  `PathGuard`), off the event loop (`client.files.fs`), at most `FILE_MAX_BYTES`.

A missing command or a crash ends the turn with `agent.error` (`fatal`); the next prompt starts
the agent again, in a new ACP session.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, RequestError, text_block
from acp.client.connection import ClientSideConnection
from acp.helpers import image_block, resource_link_block
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    FileSystemCapabilities,
    Implementation,
    ReadTextFileResponse,
    RequestPermissionResponse,
    WriteTextFileResponse,
)

from client.agents.acp_updates import AcpTurn
from client.agents.base import Agent, Prompt, ResumeRefused
from client.agents.kinds import AcpSettings
from client.agents.modes import AcpChoices, raw_request
from client.files.fs import FileTooLarge, read_text, write_text
from client.files.paths import PathGuard
from rawp.agent_state import AgentState
from rawp.attachments import IMAGE_TYPES
from rawp.clock import new_id
from rawp.errors import RawpError
from rawp.events import InteractionResponse, StopReason
from runtime.tasks import TaskOwner, race

log = logging.getLogger(__name__)
STOP_REASONS = {"end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"}
# The most an `fs/read_text_file` answer or an `fs/write_text_file` content may hold; past it
# the agent gets invalid-params (the client never holds an agent-named file of any size).
FILE_MAX_BYTES = 8 * 1024 * 1024


class _Client:
    """What the agent may ask of us (the ACP `Client` interface)."""

    def __init__(self, agent: AcpAgent) -> None:
        self.agent = agent
        self.guard = PathGuard((agent.workspace,))  # fs/* requests: the workspace only

    def _target(self, path: str) -> Path:
        """The path the agent named, judged by the client's one `PathGuard` (RAWP §7.2): NUL,
        `~`, percent-encoded separators and anything resolving outside the workspace all get
        the same ACP invalid-params error (`reason: outside the workspace`)."""
        workspace = self.agent.workspace
        try:
            return self.guard.resolve(path, workspace=workspace, relative_to=workspace)
        except RawpError:
            raise RequestError.invalid_params(
                {"path": path, "reason": "outside the workspace"}
            ) from None

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        if type(update).__name__ == "CurrentModeUpdate":  # the agent changed its own mode
            await self.agent.mode_moved(update.current_mode_id)
            return
        if type(update).__name__ == "ConfigOptionUpdate":  # …or its config options
            await self.agent.config_moved(update.config_options)
            return
        turn = self.agent.turn
        if turn is not None:
            await turn.update(update)
        elif type(update).__name__ == "AvailableCommandsUpdate":
            self.agent.early_updates.append(update)  # sent before the first prompt

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **_: Any
    ) -> RequestPermissionResponse:
        return await self.agent.ask(tool_call, options)

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **_: Any,
    ) -> ReadTextFileResponse:
        target = self._target(path)
        try:
            text = await read_text(target, max_bytes=FILE_MAX_BYTES, line=line, limit=limit)
        except FileTooLarge as exc:
            raise RequestError.invalid_params({"path": path, "reason": str(exc)}) from None
        return ReadTextFileResponse(content=text)

    async def write_text_file(
        self, session_id: str, path: str, content: str, **_: Any
    ) -> WriteTextFileResponse:
        target = self._target(path)
        try:
            await write_text(target, content, max_bytes=FILE_MAX_BYTES)
        except FileTooLarge as exc:
            raise RequestError.invalid_params({"path": path, "reason": str(exc)}) from None
        return WriteTextFileResponse()

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    def on_connect(self, conn: Any) -> None:
        return None


class AcpAgent(AcpChoices, Agent):
    kind = "acp"
    resumable = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.settings: AcpSettings = self.spec.settings  # type: ignore[assignment]
        self.turn: AcpTurn | None = None
        self.early_updates: list[Any] = []
        self._proc: asyncio.subprocess.Process | None = None
        self._conn: ClientSideConnection | None = None
        self._acp_session: str | None = None
        self._asks: dict[str, tuple[asyncio.Future, dict[str, str]]] = {}
        self._stderr: list[str] = []
        self._readers: TaskOwner | None = None  # the running agent's stderr reader
        self._cancelled = False
        self._turn_over = asyncio.Event()
        self._turn_over.set()
        self.cost_total = 0.0
        self._takes_images = False  # promptCapabilities.image of the running agent
        self._init_choices()  # modes, models, config options (client.agents.modes)
        self._starting = asyncio.Lock()  # a prompt and a mode change may both start it

    def image_types(self) -> frozenset[str]:
        return IMAGE_TYPES if self._takes_images else frozenset()

    # --- the process -------------------------------------------------------------------------

    async def _ensure(self) -> str | None:
        async with self._starting:
            return await self._ensure_started()

    async def _ensure_started(self) -> str | None:
        if self._proc is not None and self._proc.returncode is None and self._acp_session:
            return None
        await self._stop()
        command = self.settings.command
        binary = shutil.which(command[0]) if os.sep not in command[0] else command[0]
        hint = self.settings.install_hint or f"install the agent that provides {command[0]!r}"
        if binary is None or not os.access(binary, os.X_OK):
            return f"the ACP agent command {command[0]!r} was not found; {hint}"
        env = {**os.environ, **self.settings.env}
        try:
            proc = self._proc = await self.processes.spawn(
                [binary, *command[1:]], cwd=self.workspace, env=env
            )
        except OSError as exc:
            return f"cannot start {command[0]!r}: {exc.strerror or exc}; {hint}"
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        self._stderr = []
        self._readers = await TaskOwner(f"acp {self.session_id}", log).start()
        self._readers.spawn(self._read_stderr(proc.stderr), name="stderr")
        self._conn = ClientSideConnection(_Client(self), proc.stdin, proc.stdout)
        try:
            initialized = await self._until_exit(
                self._conn.initialize(
                    protocol_version=PROTOCOL_VERSION,
                    client_capabilities=ClientCapabilities(
                        fs=FileSystemCapabilities(read_text_file=True, write_text_file=True),
                        terminal=False,
                    ),
                    client_info=Implementation(name="rawp-client", version="0.1.0"),
                ),
                self.settings.startup_timeout,
            )
            capabilities = initialized.agent_capabilities
            session_id, session = await self._open_session(capabilities)
        except (ConnectionError, RequestError, TimeoutError) as exc:
            await self._stop()
            return f"the ACP agent did not start ({type(exc).__name__} {exc}): {self._tail()}"
        except ResumeRefused as exc:
            await self._stop()
            return str(exc)
        self._acp_session = session_id
        await self.conversation_known(session_id)
        prompts = capabilities.prompt_capabilities if capabilities else None
        self._takes_images = bool(prompts and prompts.image)
        return await self._opened(session)

    async def _open_session(self, capabilities: Any) -> tuple[str, dict[str, Any]]:
        """`session/new`, or `session/load` of the conversation to resume (issue 30 §2),
        which the agent must advertise (`agentCapabilities.loadSession`). The answer as the
        agent sent it: its modes, models and config options (client.agents.modes)."""
        assert self._conn is not None
        resume, self.resume_from = self.resume_from, None
        where = {"cwd": str(self.workspace), "mcpServers": []}
        if resume is None:
            session = await self._until_exit(
                raw_request(self._conn, "session/new", where), self.settings.startup_timeout
            )
            if not isinstance(session, dict) or not isinstance(session.get("sessionId"), str):
                raise ConnectionError(f"session/new answered without a sessionId: {session!r}")
            return session["sessionId"], session
        if not (capabilities and capabilities.load_session):
            raise ResumeRefused(
                "this ACP agent does not offer session/load (agentCapabilities.loadSession), "
                "so the earlier conversation cannot be resumed; start a new session instead"
            )
        loaded = await self._until_exit(
            raw_request(self._conn, "session/load", {**where, "sessionId": resume}),
            self.settings.startup_timeout,
        )
        return resume, loaded if isinstance(loaded, dict) else {}

    async def _until_exit(self, work: Any, limit: float | None = None) -> Any:
        """Await `work`, but raise ConnectionError as soon as the agent process exits."""
        proc = self._proc
        assert proc is not None
        answer: list[Any] = []

        async def answered() -> None:
            answer.append(await work)

        try:
            async with asyncio.timeout(limit):
                # The first to finish ends the other; `work`'s own error is raised as itself.
                await race(answered(), proc.wait())
        except TimeoutError:
            raise TimeoutError("no answer") from None
        if answer:
            return answer[0]
        raise ConnectionError(f"the agent exited with status {proc.returncode}")

    async def _read_stderr(self, stderr: asyncio.StreamReader) -> None:
        async for raw in stderr:
            self._stderr = [*self._stderr[-19:], raw.decode(errors="replace").rstrip()]

    def _tail(self) -> str:
        return " | ".join(line for line in self._stderr if line)[-1000:] or "no output"

    # --- one turn -----------------------------------------------------------------------------

    async def prompt(self, prompt: Prompt) -> StopReason:
        self._cancelled = False
        self._turn_over.clear()
        problem = await self._ensure()
        turn = self.turn = AcpTurn(
            self.emit, cost_so_far=self.cost_total, workspace=self.workspace.resolve()
        )
        try:
            if self._cancelled:  # cancelled while the agent was starting
                await turn.finish("cancelled", None)
                return "cancelled"
            if problem is not None:
                await self.fatal("AGENT_START_FAILED", problem)
                return "error"
            for update in self.early_updates:
                await turn.update(update)
            self.early_updates = []
            prompt = await self.images_as_files(prompt)
            await turn.states.set(AgentState.THINKING)
            return await self._exchange(turn, self._blocks(prompt))
        finally:
            self.turn = None
            self._turn_over.set()
            for future, _ in self._asks.values():
                if not future.done():
                    future.set_result(None)
            self._asks.clear()

    def _blocks(self, prompt: Prompt) -> list[Any]:
        """The ACP content of a prompt: its text, its images, each referenced file as a link."""
        blocks: list[Any] = [text_block(prompt.text)]
        blocks += [image_block(image.data, image.mime_type) for image in prompt.images]
        for path in prompt.files:
            target = self.workspace / path
            blocks.append(resource_link_block(target.name, target.resolve().as_uri()))
        return blocks

    async def _exchange(self, turn: AcpTurn, blocks: list[Any]) -> StopReason:
        """Send the prompt and wait for its answer; an agent that exits or refuses ends the
        turn with `agent.error` (a cancel that killed it ends it as cancelled)."""
        assert self._conn is not None and self._acp_session is not None
        try:
            answer = await self._until_exit(
                self._conn.prompt(session_id=self._acp_session, prompt=blocks)
            )
        except ConnectionError:
            status = self._proc.returncode if self._proc else None
            await self._stop()
            if self._cancelled:
                await turn.finish("cancelled", None)
                return "cancelled"
            await self.fatal(
                "AGENT_EXITED",
                f"the ACP agent exited (status {status}) during the turn: {self._tail()}; "
                "the next prompt starts it again",
            )
            await turn.finish("error", None)
            return "error"
        except RequestError as exc:
            await self.emit(
                "agent.error",
                {
                    "code": "AGENT_ERROR",
                    "message": f"{exc} {exc.data or ''}".strip()[:2000],
                    "severity": "error",
                },
            )
            await turn.finish("error", None)
            return "error"
        stop = answer.stop_reason if answer.stop_reason in STOP_REASONS else "end_turn"
        if self._cancelled:
            stop = "cancelled"
        await turn.finish(stop, answer.usage)
        self.cost_total = turn.cost_total
        return stop  # type: ignore[return-value]

    # --- approvals ----------------------------------------------------------------------------

    async def ask(self, tool_call: Any, options: list[Any]) -> RequestPermissionResponse:
        turn = self.turn
        if turn is None or self._cancelled:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        call = tool_call.model_dump(by_alias=True, exclude_none=True, mode="json")
        interaction_id = new_id()
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        by_id = {o.option_id: o.kind for o in options}
        self._asks[interaction_id] = (future, by_id)
        await turn.blocks.close()
        if call.get("toolCallId") and call["toolCallId"] not in turn.calls:
            await turn.update(_as_start(tool_call))
        await turn.announce(call.get("toolCallId"))
        await turn.states.set(AgentState.AWAITING_INPUT)
        payload = {
            "interaction_id": interaction_id,
            "kind": "approval",
            "prompt": f"Allow {call.get('title') or 'this tool call'}?",
            "options": [
                {"option_id": o.option_id, "label": o.name, "kind": o.kind} for o in options
            ],
        }
        if call.get("toolCallId"):
            payload["invocation_id"] = call["toolCallId"]
        await self.emit("agent.interaction.request", payload)
        option_id = await future
        if option_id is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        await turn.states.set(AgentState.TOOL_CALLING)
        return RequestPermissionResponse(
            outcome=AllowedOutcome(option_id=option_id, outcome="selected")
        )

    async def respond(self, response: InteractionResponse) -> None:
        entry = self._asks.pop(response.interaction_id, None)
        if entry is None:
            return
        future, options = entry
        if not future.done():
            # An option the agent did not offer is read as its first "reject" option.
            choice = response.option_id
            if choice not in options:
                choice = next((o for o, k in options.items() if k.startswith("reject")), None)
            future.set_result(choice)

    async def cancel(self) -> None:
        if self._turn_over.is_set():
            return
        self._cancelled = True
        for future, _ in self._asks.values():
            if not future.done():
                future.set_result(None)
        if self._conn is not None and self._acp_session is not None:
            try:
                await self._conn.cancel(session_id=self._acp_session)
            except Exception:  # the wait below ends an agent that did not hear it
                log.warning("session/cancel could not be sent to the ACP agent", exc_info=True)
        try:
            await asyncio.wait_for(self._turn_over.wait(), max(self.kill_grace, 5.0))
        except TimeoutError:
            await self._stop()  # the agent ignored session/cancel

    async def _stop(self) -> None:
        conn, self._conn = self._conn, None
        proc, self._proc = self._proc, None
        self._acp_session = None
        if conn is not None:
            try:
                await asyncio.wait_for(conn.close(), 2)
            except TimeoutError:
                log.info("the ACP connection did not close within 2 s; ending the agent")
            except Exception:  # the agent is ended below all the same
                log.warning("closing the ACP connection failed", exc_info=True)
        if proc is not None:
            if proc.stdin is not None:
                proc.stdin.close()
            await self.processes.terminate(proc, self.kill_grace)
        readers, self._readers = self._readers, None
        if readers is not None:  # its stderr reader, at EOF now that the group is gone
            await readers.close()

    async def close(self) -> None:
        await self._stop()


def _as_start(tool_call: Any) -> dict[str, Any]:
    data = tool_call.model_dump(by_alias=True, exclude_none=True, mode="json")
    return {**data, "sessionUpdate": "tool_call", "title": data.get("title") or "tool"}
