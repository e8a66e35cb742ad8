"""What the `claude-code` kind writes to and reads from the `claude` CLI (claude_code.py
explains the protocol): the command line, the stream-json lines of the control protocol, the
approval question and answer, and the bounded inbox the CLI's stdout is read into.

Pure message building, kept apart from the process and the turn (claude_code.py), so each
line's shape is read — and tested — in one place.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from client.agents.base import Prompt
from client.agents.claude_tools import CATEGORIES, DESCRIPTIONS
from client.agents.kinds import ClaudeCodeSettings
from rawp.events import CatalogTool, InteractionResponse

EOF = object()
INBOX_MAX = 1024  # CLI messages read ahead of the turn; past it the CLI waits on its stdout


class Inbox:
    """What one CLI process wrote, in order, bounded: the reader waits when it is full
    (backpressure on the CLI's stdout), and `EOF` comes after the last message once the
    process has ended, however full the queue was (issue 14 §6)."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[Any] = asyncio.Queue(maxsize=INBOX_MAX)
        self._ended = False

    async def put(self, message: dict[str, Any]) -> None:
        await self._queue.put(message)

    def end(self) -> None:
        self._ended = True
        if not self._queue.full():  # wakes a turn waiting on an empty queue
            self._queue.put_nowait(EOF)

    async def get(self) -> Any:
        if self._ended and self._queue.empty():
            return EOF
        message = await self._queue.get()
        if message is EOF:
            self._queue.put_nowait(EOF)  # every later get sees the end too
        return message

    def drop_leftovers(self) -> None:
        """What the last turn left behind (after an interrupt); the end stays."""
        while not self._queue.empty():
            if self._queue.get_nowait() is EOF:
                self._queue.put_nowait(EOF)
                return


def cli_argv(
    binary: str,
    settings: ClaudeCodeSettings,
    resume: str | None,
    mode: str | None = None,
    fork: bool = False,
    model: str | None = None,
) -> list[str]:
    """The CLI's command line: stream-json both ways, approvals over stdio, the agents file's
    settings as flags, and `--resume` when a conversation is to be continued. `mode`, the
    permission mode chosen from chat, takes the place of the agents file's; so does `model`,
    the model chosen from chat."""
    argv = [binary, *settings.command[1:]]
    argv += ["--input-format", "stream-json", "--output-format", "stream-json"]
    argv += ["--verbose", "--include-partial-messages", "--permission-prompt-tool", "stdio"]
    flags = {
        "--model": model or settings.model,
        "--permission-mode": mode or settings.permission_mode,
        "--append-system-prompt": settings.append_system_prompt,
        "--max-turns": settings.max_turns,
    }
    for flag, value in flags.items():
        if value is not None:
            argv.append(f"{flag}={value}")
    for key, flag in (
        ("allowed_tools", "--allowedTools"),
        ("disallowed_tools", "--disallowedTools"),
    ):
        if names := getattr(settings, key):
            argv.append(f"{flag}={','.join(names)}")
    if resume:
        argv.append(f"--resume={resume}")
        if fork:  # issue 30 §2: a copy under a new session id; the original stays as it was
            argv.append("--fork-session")
    return argv


def mention(path: str) -> str:
    return f'@"{path}"' if any(c.isspace() for c in path) else f"@{path}"


def user_content(prompt: Prompt) -> str | list[dict[str, Any]]:
    """The `content` of the stream-json user message: the text alone, or with images, the
    Anthropic Messages content blocks — each image as a base64 `image` block, then the text."""
    text = prompt.text if prompt.input_type != "slash_command" else prompt.text.strip()
    if not prompt.images:
        return text
    blocks: list[dict[str, Any]] = [
        {
            "type": "image",
            "source": {"type": "base64", "media_type": image.mime_type, "data": image.data},
        }
        for image in prompt.images
    ]
    if text:
        blocks.append({"type": "text", "text": text})
    return blocks


def user_message(prompt: Prompt) -> dict[str, Any]:
    return {
        "type": "user",
        "message": {"role": "user", "content": user_content(prompt)},
        "parent_tool_use_id": None,
        "session_id": "default",
    }


def control_request(request_id: str, request: dict[str, Any]) -> dict[str, Any]:
    return {"type": "control_request", "request_id": request_id, "request": request}


def control_success(request_id: str, response: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "control_response",
        "response": {"subtype": "success", "request_id": request_id, "response": response},
    }


def control_error(request_id: str, error: str) -> dict[str, Any]:
    return {
        "type": "control_response",
        "response": {"subtype": "error", "request_id": request_id, "error": error},
    }


def approval_request(request_id: str, request: dict[str, Any]) -> dict[str, Any]:
    """The `agent.interaction.request` payload for the CLI's `can_use_tool` request: allow,
    "always allow" when the CLI suggests permissions to keep, deny."""
    name = str(request.get("display_name") or request.get("tool_name") or "a tool")
    options = [{"option_id": "allow", "label": "Allow", "kind": "allow_once"}]
    if request.get("permission_suggestions"):
        options.append(
            {"option_id": "allow_always", "label": "Always allow", "kind": "allow_always"}
        )
    options.append({"option_id": "deny", "label": "Deny", "kind": "reject_once"})
    payload = {
        "interaction_id": request_id,
        "kind": "approval",
        "prompt": f"Allow {name}: {summary(request.get('input') or {})}?",
        "options": options,
    }
    if request.get("tool_use_id"):
        payload["invocation_id"] = str(request["tool_use_id"])
    return payload


def approval_answer(request: dict[str, Any], response: InteractionResponse) -> dict[str, Any]:
    """The `control_response` body for the user's answer to `request`: allow with the input
    unchanged (and the suggested permissions for "always"), or deny with the user's words."""
    if response.option_id in ("allow", "allow_always"):
        answer: dict[str, Any] = {"behavior": "allow", "updatedInput": request.get("input") or {}}
        if response.option_id == "allow_always" and request.get("permission_suggestions"):
            answer["updatedPermissions"] = request["permission_suggestions"]
        return answer
    return {"behavior": "deny", "message": response.text or "The user denied this."}


def summary(tool_input: dict[str, Any]) -> str:
    """A short description of what a tool call will do, for the approval prompt."""
    for key in ("command", "file_path", "path", "url", "pattern", "query"):
        if isinstance(tool_input.get(key), str):
            return tool_input[key][:300]
    return json.dumps(tool_input)[:300]


def published_tools(names: list[Any]) -> list[dict[str, Any]]:
    """The `tool.catalog.publish` tools for the tool names the CLI's `init` lists (DPS §5)."""
    return [
        CatalogTool(
            name=str(name),
            description=DESCRIPTIONS.get(str(name), ""),
            category=CATEGORIES.get(str(name), "other"),
        ).model_dump(mode="json")
        for name in names
    ]


def published_commands(commands: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The `agent.commands.publish` commands for the CLI's slash commands (its `initialize`
    answer): the name without its slash, the argument hint as an optional parameter."""
    return [
        {
            "name": str(c.get("name", "")).lstrip("/"),
            "description": str(c.get("description", "")),
            **(
                {"parameters": [{"name": str(c["argumentHint"]), "required": False}]}
                if c.get("argumentHint")
                else {}
            ),
        }
        for c in commands
        if c.get("name")
    ]
