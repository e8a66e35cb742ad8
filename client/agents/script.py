"""The `script` agent kind: a configured executable run once per prompt (DPS §16.3).

Settings in the agents file:

* `command` — the argv (a list, or a string split like a shell would, never run by a shell);
* `mode` — `plain` (default) or `jsonl`;
* `env` — extra environment variables for the script.

For every prompt the script is started in the workspace with the referenced files, then the
prompt's `context_files`, appended to `command` as workspace-relative paths (F-ADPT-04; a path
starting with `-` gets `./` so it can never read as an option). The prompt text, tokens
written as their `display_path`, is in `RAWP_PROMPT`; plain mode also writes it on stdin and
closes stdin. Prompt attachments arrive as files: a script takes no images, so an image is
saved under `attachments_dir` like any other attachment, passed as a file argument, and the
user is told it was not delivered as an image (`ATTACHMENT_NOT_DELIVERED`).

* plain: each stdout line becomes `agent.text.delta`; stderr lines become a `tool.invoke.stream`
  (`stream: "stderr"`) of one pseudo tool call named `stderr`;
* jsonl: each stdout line is one DPS event `{"type": …, "payload": …}`; the client adds the
  envelope. `control.interaction.response` frames are written back to stdin as JSON lines.

Exit status 0 ends the turn with `end_turn`; anything else with `error` after an
`agent.error`. docs/agents.md is the user-facing description of this protocol.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import AsyncIterator
from typing import Any

import orjson

from client.agents.base import Agent, Prompt
from client.processes.children import LINE_LIMIT
from rawp.errors import FrameError
from rawp.events import EVENTS, Direction, InteractionResponse, StopReason

# What a jsonl script may emit: agent-side events, minus those the client itself owns.
CLIENT_OWNED = {
    "session.turn.start",
    "session.turn.end",
    "session.capabilities",
    "session.history",
    "session.file.candidates",
    "session.error",
}
SCRIPT_EVENTS = frozenset(
    t
    for t, spec in EVENTS.items()
    if spec.direction in (Direction.AGENT_TO_EDGE, Direction.BOTH) and t not in CLIENT_OWNED
)
READ_CHUNK = 64 * 1024  # bytes of stdout taken per read: every whole line in it at once
BLANK = object()  # a jsonl line with nothing on it, skipped


class ScriptAgent(Agent):
    kind = "script"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.command = list(self.spec.settings.command)
        self.mode: str = self.spec.settings.mode
        self._proc: asyncio.subprocess.Process | None = None
        self._in_turn = False
        self._cancelled = False

    async def prompt(self, prompt: Prompt) -> StopReason:
        self._cancelled = False
        self._in_turn = True
        try:
            # A script takes files, not images: each becomes a file argument, and the user is
            # told it was not delivered as an image.
            prompt = await self.images_as_files(prompt)
            return await self._run(prompt)
        finally:
            self._in_turn = False

    async def _run(self, prompt: Prompt) -> StopReason:
        files = [*prompt.files, *(f for f in prompt.context_files if f not in prompt.files)]
        argv = [*self.command, *(f"./{f}" if f.startswith("-") else f for f in files)]
        env = {
            **os.environ,
            **self.spec.settings.env,
            "RAWP_PROMPT": prompt.text,
            "RAWP_INPUT_TYPE": prompt.input_type,
            "RAWP_SESSION_ID": self.session_id,
            "RAWP_WORKSPACE": str(self.workspace),
            "RAWP_AGENT_NAME": self.spec.name,
        }
        try:
            proc = self._proc = await self.processes.spawn(argv, cwd=self.workspace, env=env)
        except OSError as exc:  # not found, not executable: the agents file is wrong
            await self.fatal(
                "AGENT_START_FAILED", f"cannot start {self.spec.name}: {exc.strerror or exc}"
            )
            return "error"
        assert proc.stdin and proc.stdout and proc.stderr
        if self._cancelled:  # the cancel came while the process was starting
            await self.processes.terminate(proc, self.kill_grace)
            self._proc = None
            return "cancelled"
        if self.mode == "plain":
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                proc.stdin.write(prompt.text.encode())
                await proc.stdin.drain()
            proc.stdin.close()
        reader = self._read_jsonl if self.mode == "jsonl" else self._read_plain
        try:
            await _both(reader(proc.stdout), self._read_stderr(proc.stderr))
            status = await self.processes.reap(proc)
        finally:
            self._proc = None
        if self._cancelled:
            return "cancelled"
        if status != 0:
            await self.emit(
                "agent.error",
                {
                    "code": "AGENT_EXITED",
                    "message": f"{self.spec.name} exited with status {status}",
                    "severity": "error",
                    "retryable": True,
                },
            )
            return "error"
        return "end_turn"

    async def _read_plain(self, stdout: asyncio.StreamReader) -> None:
        text = ""
        async for raw in stdout:
            line = raw.decode(errors="replace")
            text += line
            await self.emit("agent.text.delta", {"content_index": 0, "text": line})
        if text:
            await self.emit("agent.text.done", {"content_index": 0, "text": text})

    async def _read_jsonl(self, stdout: asyncio.StreamReader) -> None:
        async for lines in line_batches(stdout):
            for raw in lines:
                event, problem = read_event(raw)
                if event is BLANK:
                    continue
                if problem is None and not (
                    isinstance(event, dict) and isinstance(event.get("payload", {}), dict)
                ):
                    problem = "a line that is not {type, payload}"
                elif problem is None and event.get("type") not in SCRIPT_EVENTS:
                    problem = f"an event a script may not send: {event.get('type')!r}"
                if problem is not None:
                    await self._warn(f"{self.spec.name} wrote {problem}")
                    continue
                try:
                    await self.emit(event["type"], event.get("payload", {}))
                except FrameError as exc:  # the payload broke its schema
                    await self._warn(f"{self.spec.name} sent a bad {event['type']}: {exc}")

    async def _read_stderr(self, stderr: asyncio.StreamReader) -> None:
        started = False
        async for raw in stderr:
            if not started:
                started = True
                await self.emit(
                    "tool.invoke.request",
                    {"invocation_id": f"{self.spec.name}-stderr", "tool_name": "stderr"},
                )
            await self.emit(
                "tool.invoke.stream",
                {
                    "invocation_id": f"{self.spec.name}-stderr",
                    "stream": "stderr",
                    "text": raw.decode(errors="replace"),
                },
            )

    async def _warn(self, message: str) -> None:
        await self.emit(
            "agent.error", {"code": "SCRIPT_PROTOCOL", "message": message, "severity": "warning"}
        )

    async def respond(self, response: InteractionResponse) -> None:
        proc = self._proc
        if proc is None or proc.stdin is None or self.mode != "jsonl":
            return
        line = {
            "type": "control.interaction.response",
            "payload": response.model_dump(exclude_none=True),
        }
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            proc.stdin.write(json.dumps(line).encode() + b"\n")
            await proc.stdin.drain()

    async def cancel(self) -> None:
        if not self._in_turn:
            return
        self._cancelled = True
        if self._proc is not None:  # else the turn sees `_cancelled` once it has started it
            await self.processes.terminate(self._proc, self.kill_grace)

    async def close(self) -> None:
        await self.cancel()


def read_event(raw: bytes) -> tuple[Any, str | None]:
    """One jsonl line: (the JSON value, None), (BLANK, None), or (None, what is wrong).

    orjson reads the bytes as they came; a line it refuses (bad UTF-8, NaN, a huge integer,
    a lone surrogate, odd whitespace) is read the way it always was — decoded with
    replacement, stripped, `json.loads` — so what a script may write has not changed.
    """
    try:
        return orjson.loads(raw), None
    except orjson.JSONDecodeError:
        pass
    line = raw.decode(errors="replace").strip()
    if not line:
        return BLANK, None
    try:
        return json.loads(line), None
    except ValueError:
        return None, "a line that is not JSON"


async def line_batches(stream: asyncio.StreamReader) -> AsyncIterator[list[bytes]]:
    """The stream's lines (without their newline), every whole line that has arrived at once.

    One read per chunk rather than one per line: a script that floods writes thousands of
    lines between two wake-ups of the client (issue 20). A line longer than LINE_LIMIT raises
    ValueError, as `StreamReader.readline` does at the limit the stream was opened with; a
    last line without a newline is given at the end.
    """
    pending: list[bytes] = []  # the start of a line that has not ended yet
    pending_size = 0
    while chunk := await stream.read(READ_CHUNK):
        if b"\n" not in chunk:
            pending.append(chunk)
            pending_size += len(chunk)
            if pending_size > LINE_LIMIT:
                raise ValueError("Separator is not found, and chunk exceed the limit")
            continue
        if pending:
            chunk = b"".join((*pending, chunk))
            pending.clear()
        lines = chunk.split(b"\n")
        rest = lines.pop()
        pending_size = len(rest)
        if rest:
            pending.append(rest)
        yield lines
    if pending:
        yield [b"".join(pending)]


async def _both(*readers: Any) -> None:
    """Read every stream to its end; one that fails ends the others, and its error is raised
    as itself (the session reports it as the turn's `AGENT_FAILED`)."""
    try:
        async with asyncio.TaskGroup() as group:
            for reader in readers:
                group.create_task(reader)
    except ExceptionGroup as failed:
        raise failed.exceptions[0] from None
