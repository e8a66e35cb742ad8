"""The `claude-code` agent kind: one long-lived `claude` CLI process per session.

The CLI runs headless with stream-json both ways:

    claude --input-format stream-json --output-format stream-json --verbose
           --include-partial-messages --permission-prompt-tool stdio [settings…]

and this kind speaks the CLI's control protocol on the same pipes (the protocol the
`claude-agent-sdk` package wraps; we speak it directly so that every stream event reaches the
mapping in `claude_stream`; each line's shape is built in `claude_wire`):

* `control_request {subtype: initialize}` once after start; its answer lists the slash
  commands → `agent.commands.publish` (re-sent when the list changes);
* each prompt is a `{"type": "user", …}` line; the turn ends with the CLI's `result` line;
  prompt images go in it as Anthropic `image` content blocks (base64), before the text;
* `control_request {subtype: can_use_tool}` from the CLI is an approval →
  `agent.interaction.request`; the user's `control.interaction.response` goes back as a
  `control_response` (`allow`, with `updatedPermissions` for "always", or `deny`);
* `control.mode.set` sends `control_request {subtype: set_permission_mode, mode}` to a
  running CLI; a CLI started later (or again) gets the chosen mode as `--permission-mode`.
  The modes offered are `default`, `acceptEdits` and `plan` (plus the agents file's own
  `permission_mode`, so `bypassPermissions` only where the owner configured it); the mode
  each turn's `system/init` reports is taken as the current one (the CLI leaves `plan` by
  itself when a plan is accepted);
* `control.model.set` sends `control_request {subtype: set_model, model}` to a running CLI
  and `--model` to one started later; the models offered are the agents file's `models`
  (default `sonnet`, `opus`, `haiku`, aliases every CLI version takes) and its `model`;
* `control.prompt.cancel` sends `control_request {subtype: interrupt}`; a CLI that does not end
  the turn within the grace period is killed (SIGTERM, then SIGKILL) and the next prompt
  starts a new process that resumes the conversation (`--resume=<its session id>`).

The CLI's stdout is read by a task the agent owns (`TaskOwner`, one per process) into a bounded
`Inbox`: when a turn does not keep up, the reader waits and so does the CLI (backpressure).

A missing binary or a crashed process ends the turn with `agent.error` (`fatal`) naming what to
install or what the CLI said; the session stays usable. Settings (agents file): `command`
(default `["claude"]`), `model`, `permission_mode`, `allowed_tools`, `disallowed_tools`,
`append_system_prompt`, `max_turns`, `env`, `startup_timeout` (s, default 60).

File references (DPS §16.3, decision A-32): the token's place in the sentence keeps its
`display_path`, and every referenced file is appended to the message as an `@path` mention,
which the CLI reads and attaches itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import shutil
import signal
from collections.abc import Sequence
from typing import Any

from client.agents.base import Agent, Prompt, Reference
from client.agents.claude_stream import ClaudeTurn
from client.agents.claude_tools import catalog
from client.agents.claude_wire import (
    EOF,
    Inbox,
    approval_answer,
    approval_request,
    cli_argv,
    control_error,
    control_request,
    control_success,
    mention,
    published_commands,
    published_tools,
    user_message,
)
from client.agents.kinds import ClaudeCodeSettings
from client.agents.modes import ClaudeChoices
from rawp.agent_state import AgentState
from rawp.attachments import IMAGE_TYPES
from rawp.events import CatalogTool, InteractionResponse, StopReason
from rawp.fileref import Part, extract_paths, to_literal
from runtime.tasks import TaskOwner

log = logging.getLogger(__name__)
INSTALL_HINT = "install Claude Code: npm install -g @anthropic-ai/claude-code"


class ClaudeCodeAgent(ClaudeChoices, Agent):
    kind = "claude-code"
    resumable = True
    forkable = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.settings: ClaudeCodeSettings = self.spec.settings  # type: ignore[assignment]
        self._proc: asyncio.subprocess.Process | None = None
        # The running CLI's stdout and stderr readers: owned by the agent, one owner per process.
        self._readers: TaskOwner | None = None
        self._inbox = Inbox()
        self._waiting: dict[str, asyncio.Future] = {}  # control request id → its answer
        self._ids = itertools.count(1)
        self._stderr_tail: list[str] = []
        self._claude_session: str | None = None
        self._commands: list[dict[str, Any]] | None = None
        self._published: list[dict[str, Any]] | None = None
        self._tool_names: list[Any] | None = None
        self._approvals: dict[str, dict[str, Any]] = {}  # interaction id → the CLI's request
        self._turn: ClaudeTurn | None = None
        self._turn_over = asyncio.Event()
        self._turn_over.set()
        self._cancelling = False
        self.cost_total = 0.0
        self._mode = self.settings.permission_mode  # None: the CLI's own default
        self._model = self.settings.model  # None: the CLI's own default

    def catalog(self) -> list[CatalogTool]:
        return list(self.spec.tools) or catalog()

    def image_types(self) -> frozenset[str]:
        return IMAGE_TYPES  # the CLI passes content blocks on to the Messages API

    def convert(
        self,
        message_id: str,
        parts: Sequence[Part],
        references: Sequence[Reference],
        input_type: str,
    ) -> Prompt:
        files = extract_paths(parts, references).paths
        text = to_literal(parts)
        if files:
            text += "\n\n" + " ".join(mention(path) for path in files)
        return Prompt(message_id, text, tuple(files), input_type)

    # --- the process -------------------------------------------------------------------------

    async def _ensure_process(self) -> str | None:
        """Start the CLI if it is not running; return a problem, or None."""
        if self._proc is not None and self._proc.returncode is None:
            return None
        if self.resume_from:  # issue 30 §2: `--resume <id>`; the retry below starts afresh
            self._claude_session, self.resume_from = self.resume_from, None
        problem = await self._start_process()
        if problem is not None and self._claude_session and not self._cancelling:
            # A CLI killed before it saved its conversation cannot resume it: start afresh.
            self._claude_session = None
            problem = await self._start_process()
            if problem is None:
                await self.emit(
                    "agent.error",
                    {
                        "code": "RESUME_FAILED",
                        "message": "the previous conversation could not be resumed; "
                        "this prompt starts a new one",
                        "severity": "warning",
                    },
                )
        return problem

    async def _start_process(self) -> str | None:
        name = self.settings.command[0]
        binary = shutil.which(name) if os.sep not in name else name
        if binary is None or not os.access(binary, os.X_OK):
            return f"the Claude Code CLI {name!r} was not found; {INSTALL_HINT}"
        env = {**os.environ, **self.settings.env}
        try:
            self._proc = await self.processes.spawn(
                cli_argv(
                    binary,
                    self.settings,
                    self._claude_session,
                    self._mode,
                    self.fork,
                    model=self._model,
                ),
                cwd=self.workspace,
                env=env,
            )
        except OSError as exc:
            return f"cannot start {name!r}: {exc.strerror or exc}; {INSTALL_HINT}"
        self._inbox = Inbox()
        self._stderr_tail = []
        self._readers = await TaskOwner(f"claude-code {self.session_id}", log).start()
        self._readers.spawn(self._read_stdout(self._proc, self._inbox), name="stdout")
        self._readers.spawn(self._read_stderr(self._proc), name="stderr")
        try:
            answer = await asyncio.wait_for(
                self._control({"subtype": "initialize", "hooks": None}),
                self.settings.startup_timeout,
            )
        except (TimeoutError, ConnectionError) as exc:
            await self._stop_process()
            return f"Claude Code did not start ({type(exc).__name__}): {self._stderr()}"
        if isinstance(answer.get("commands"), list):
            self._commands = [c for c in answer["commands"] if isinstance(c, dict)]
        return None

    async def _read_stdout(self, proc: asyncio.subprocess.Process, inbox: Inbox) -> None:
        assert proc.stdout is not None
        try:
            async for raw in proc.stdout:
                await self._route(raw, inbox)
        except (ValueError, asyncio.LimitOverrunError):  # a line past the 16 MiB limit
            log.warning("Claude Code wrote a line too long to read; ending it")
            _kill_group(proc)
        finally:
            await self.processes.reap(proc)
            for future in self._waiting.values():
                if not future.done():
                    future.set_exception(ConnectionError("Claude Code exited"))
            self._waiting.clear()
            inbox.end()  # the turn waiting on this process ends, whatever happened

    async def _route(self, raw: bytes, inbox: Inbox) -> None:
        try:
            message = json.loads(raw)
        except ValueError:
            return  # not ours to show: the CLI's own diagnostics
        if not isinstance(message, dict):
            return
        if message.get("type") == "control_response":
            answer = message.get("response") or {}
            future = self._waiting.pop(str(answer.get("request_id")), None)
            if future is not None and not future.done():
                if answer.get("subtype") == "error":
                    future.set_exception(ConnectionError(str(answer.get("error"))))
                else:
                    future.set_result(answer.get("response") or {})
            return
        await inbox.put(message)

    async def _read_stderr(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stderr is not None
        async for raw in proc.stderr:
            self._stderr_tail = [*self._stderr_tail[-19:], raw.decode(errors="replace").rstrip()]

    def _stderr(self) -> str:
        return " | ".join(line for line in self._stderr_tail if line)[-1000:] or "no output"

    async def _write(self, message: dict[str, Any]) -> None:
        proc = self._proc
        if proc is None or proc.stdin is None or proc.returncode is not None:
            raise ConnectionError("Claude Code is not running")
        try:
            proc.stdin.write(json.dumps(message).encode() + b"\n")
            await proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise ConnectionError("Claude Code closed its input") from exc

    async def _control(self, request: dict[str, Any]) -> dict[str, Any]:
        request_id = f"rawp-{next(self._ids)}"
        future = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = future
        await self._write(control_request(request_id, request))
        return await future

    async def _answer(self, request_id: str, response: dict[str, Any]) -> None:
        with contextlib.suppress(ConnectionError):
            await self._write(control_success(request_id, response))

    # --- one turn -----------------------------------------------------------------------------

    async def prompt(self, prompt: Prompt) -> StopReason:
        self._cancelling = False
        self._turn_over.clear()
        try:
            problem = await self._ensure_process()
            if self._cancelling:  # cancelled while the CLI was starting
                return "cancelled"
            if problem is not None:
                await self.fatal("AGENT_START_FAILED", problem)
                return "error"
            self._inbox.drop_leftovers()
            turn = self._turn = ClaudeTurn(self.emit, cost_so_far=self.cost_total)
            try:
                await self._publish_commands()
                await turn.states.set(AgentState.THINKING)
                await self._write(user_message(prompt))
                return await self._run(turn)
            except ConnectionError:
                return await self._crashed(turn)
        finally:
            self._turn = None
            self._approvals.clear()
            self._turn_over.set()

    async def _run(self, turn: ClaudeTurn) -> StopReason:
        while True:
            message = await self._inbox.get()
            if message is EOF:
                return await self._crashed(turn)
            kind = message.get("type")
            if kind == "result":
                stop = await turn.finish(message, cancelled=self._cancelling)
                self.cost_total = turn.cost_total
                return stop
            if kind == "control_request":
                await self._control_request(turn, message)
            elif kind == "control_cancel_request":
                self._approvals = {
                    k: v for k, v in self._approvals.items() if k != message.get("request_id")
                }
            else:
                if kind == "system" and message.get("subtype") == "init":
                    await self._on_init(message)
                await turn.feed(message)

    async def _crashed(self, turn: ClaudeTurn) -> StopReason:
        proc = self._proc
        status = proc.returncode if proc is not None else None
        await self._stop_process()
        if self._cancelling:
            return await turn.finish(None, cancelled=True)
        await self.fatal(
            "AGENT_EXITED",
            f"Claude Code exited (status {status}) during the turn: {self._stderr()}; "
            "the next prompt starts it again",
        )
        return await turn.finish(None, cancelled=False)

    async def _on_init(self, init: dict[str, Any]) -> None:
        """A turn's `system/init`: the conversation to resume, the tools this CLI version
        really has (re-published when they differ, DPS §5) and the mode it is in — it leaves
        `plan` by itself once the user accepts a plan (ExitPlanMode), and the edges must see
        that too."""
        known = init.get("session_id")
        if isinstance(known, str) and known:
            self.fork = False  # forked once: later CLIs resume the copy itself
            self._claude_session = known
            await self.conversation_known(known)  # a resumed one is this session's too
        names = init.get("tools")
        if not self.spec.tools and isinstance(names, list) and names != self._tool_names:
            self._tool_names = names
            await self.emit("tool.catalog.publish", {"tools": published_tools(names)})
        mode = init.get("permissionMode")
        if isinstance(mode, str) and mode and mode != (self._mode or "default"):
            self._mode = mode
            await self.mode_changed()

    async def _publish_commands(self) -> None:
        if self._commands is None or self._commands == (self._published or []):
            return
        self._published = self._commands
        commands = published_commands(self._commands)
        await self.emit("agent.commands.publish", {"commands": commands})

    # --- approvals (DPS §4 interaction requests) --------------------------------------------

    async def _control_request(self, turn: ClaudeTurn, message: dict[str, Any]) -> None:
        request_id = str(message.get("request_id"))
        request = message.get("request") or {}
        if request.get("subtype") != "can_use_tool":
            with contextlib.suppress(ConnectionError):
                error = f"{request.get('subtype')} is not supported by RAWP"
                await self._write(control_error(request_id, error))
            return
        await turn.flush()  # the tool call is shown before the question about it
        self._approvals[request_id] = request
        await turn.states.set(AgentState.AWAITING_INPUT)
        await self.emit("agent.interaction.request", approval_request(request_id, request))

    async def respond(self, response: InteractionResponse) -> None:
        request = self._approvals.pop(response.interaction_id, None)
        if request is None:
            return
        turn = self._turn
        answer = approval_answer(request, response)
        if answer["behavior"] == "deny" and turn is not None and request.get("tool_use_id"):
            turn.denied.add(str(request["tool_use_id"]))
        if turn is not None:
            await turn.states.set(AgentState.TOOL_CALLING)
        await self._answer(response.interaction_id, answer)

    # --- cancel and the end -------------------------------------------------------------------

    async def cancel(self) -> None:
        if self._turn_over.is_set():
            return
        self._cancelling = True
        for request_id in list(self._approvals):
            self._approvals.pop(request_id)
            await self._answer(
                request_id, {"behavior": "deny", "message": "cancelled", "interrupt": True}
            )
        with contextlib.suppress(ConnectionError):
            await self._write(control_request(f"rawp-{next(self._ids)}", {"subtype": "interrupt"}))
        try:
            await asyncio.wait_for(self._turn_over.wait(), max(self.kill_grace, 5.0))
        except TimeoutError:  # the CLI did not stop: end it; the next prompt resumes
            await self._stop_process()

    async def _stop_process(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            if proc.stdin is not None:
                proc.stdin.close()
            await self.processes.terminate(proc, self.kill_grace)
        # The group is gone, so the readers are at EOF or nearly: end them either way. A
        # reader's failure was logged by the owner when it happened.
        readers, self._readers = self._readers, None
        if readers is not None:
            await readers.close()

    async def close(self) -> None:
        await self._stop_process()


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
