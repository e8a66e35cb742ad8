"""ACP `session/update` notifications → DPS events, one turn at a time (dps-profile §3–§7).

| ACP update | DPS |
|---|---|
| `agent_message_chunk` (text) | `agent.text.delta` / `.done` (per-turn `content_index`) |
| `agent_thought_chunk` (text) | `agent.thinking.delta` / `.done` |
| `tool_call` | `tool.invoke.request` (name, `title`, `input` = `rawInput`) |
| `tool_call_update` → `completed`/`failed` | `tool.invoke.result` (`output_type` below) |
| `plan` | `agent.plan.updated` (full replacement) |
| `available_commands_update` | `agent.commands.publish` |
| `usage_update` with `cost` | the turn's `session.usage.cost_usd` (growth of the running cost) |
| `usage_update` `used` / `size` | `session.usage.context_tokens` / `context_window` (extensions) |

Output types: a `diff` content → `diff` (unified, from old/new text); kind `read` →
`file_content`; `search` → `file_list`; `fetch` → `web_content`; a sub-agent (`Task`) →
`agent_result`; anything else → `text`. A tool call still open when the turn ends is reported
`cancelled`. A call's `tool_name` is the agent's own tool name when its `_meta` says
(`_meta.claudeCode.toolName`), else the ACP `kind`.
"""

from __future__ import annotations

import contextlib
import difflib
from pathlib import Path
from typing import Any

from client.agents.base import Emit
from client.agents.blocks import Blocks
from client.agents.states import AgentStates
from rawp.agent_state import AgentState

AGENT_TOOLS = {"Task", "Agent"}


def _dump(model: Any) -> dict[str, Any]:
    if hasattr(model, "model_dump"):
        return model.model_dump(by_alias=True, exclude_none=True, mode="json")
    return dict(model) if isinstance(model, dict) else {}


class AcpTurn:
    def __init__(
        self, emit: Emit, *, cost_so_far: float = 0.0, workspace: Path | None = None
    ) -> None:
        self.emit = emit
        self.workspace = workspace
        self.blocks = Blocks(emit)
        self.states = AgentStates(emit)
        self.calls: dict[str, dict[str, Any]] = {}  # toolCallId → what we know of it
        self.open_calls: list[str] = []
        self.cost_so_far = cost_so_far
        self.cost_total = cost_so_far
        self.tool_count = 0
        self.context: tuple[int, int] | None = None  # the last `usage_update` used/size

    async def update(self, update: Any) -> None:
        data = _dump(update)
        kind = data.get("sessionUpdate")
        if kind not in ("tool_call", "tool_call_update"):
            await self.announce()  # the model moved on: its calls' inputs are complete
        if kind in ("agent_message_chunk", "agent_thought_chunk"):
            content = data.get("content") or {}
            if content.get("type") == "text":
                await self.states.set(AgentState.THINKING)
                block = "text" if kind == "agent_message_chunk" else "thinking"
                await self.blocks.delta(block, content.get("text", ""))
        elif kind == "tool_call":
            await self._tool_call(data)
        elif kind == "tool_call_update":
            await self._tool_update(data)
        elif kind == "plan":
            await self.emit("agent.plan.updated", {"entries": plan_entries(data)})
        elif kind == "available_commands_update":
            await self.emit("agent.commands.publish", {"commands": commands(data)})
        elif kind == "usage_update":
            cost = data.get("cost") or {}
            if isinstance(cost.get("amount"), int | float) and cost.get("currency", "USD") == "USD":
                self.cost_total = float(cost["amount"])
            used, size = data.get("used"), data.get("size")
            if isinstance(used, int) and isinstance(size, int) and used >= 0 and size >= 0:
                self.context = (used, size)

    async def _tool_call(self, data: dict[str, Any]) -> None:
        call_id = str(data.get("toolCallId"))
        call = self.calls.get(call_id)
        if call is None:
            await self.blocks.close()
            await self.states.set(AgentState.TOOL_CALLING)
            meta = (data.get("_meta") or {}).get("claudeCode") or {}
            name = str(meta.get("toolName") or data.get("kind") or "tool")
            # The Claude Code adapter serves Read/Write/Edit itself, as `mcp__acp__Read` etc.
            name = name.removeprefix("mcp__acp__")
            call = {"name": name, "kind": data.get("kind"), "content": [], "locations": []}
            call.update(input={}, title=None, announced=False)
            self.calls[call_id] = call
            self.open_calls.append(call_id)
        # Agents announce a call as soon as the model starts it (no input yet) and again when
        # its input is complete; the request goes out once, with the input.
        if isinstance(data.get("rawInput"), dict) and data["rawInput"]:
            call["input"] = data["rawInput"]
        if data.get("title"):
            call["title"] = str(data["title"])
        if call["input"]:
            await self.announce(call_id)
        await self._tool_update(data)

    async def announce(self, call_id: str | None = None) -> None:
        """Send the `tool.invoke.request` of one call (or of every call still unannounced)."""
        for each in [call_id] if call_id else list(self.open_calls):
            call = self.calls.get(each)
            if call is None or call["announced"]:
                continue
            call["announced"] = True
            self.tool_count += 1
            request: dict[str, Any] = {
                "invocation_id": each,
                "tool_name": call["name"],
                "input": call["input"],
            }
            if call["title"]:
                request["title"] = call["title"]
            await self.emit("tool.invoke.request", request)

    async def _tool_update(self, data: dict[str, Any]) -> None:
        call_id = str(data.get("toolCallId"))
        call = self.calls.get(call_id)
        if call is None:  # an update for a call we never saw announced
            await self._tool_call({**data, "sessionUpdate": "tool_call"})
            return
        for key in ("content", "locations"):
            if data.get(key):
                call[key] = data[key]
        if data.get("kind"):
            call["kind"] = data["kind"]
        if "rawOutput" in data:
            call["raw_output"] = data["rawOutput"]
        if data.get("sessionUpdate") == "tool_call_update" and isinstance(
            data.get("rawInput"), dict
        ):
            call["input"] = data["rawInput"] or call["input"]
        status = data.get("status")
        if data.get("sessionUpdate") == "tool_call_update" or status in ("completed", "failed"):
            await self.announce(call_id)
        if status in ("completed", "failed") and call_id in self.open_calls:
            await self.blocks.close()  # a result never lands inside an open text block
            self.open_calls.remove(call_id)
            payload = result(call_id, call, failed=status == "failed", workspace=self.workspace)
            await self.emit("tool.invoke.result", payload)

    async def finish(self, stop: str, usage: Any) -> None:
        await self.blocks.close()
        await self.announce()
        for call_id in list(self.open_calls):
            self.open_calls.remove(call_id)
            call = self.calls[call_id]
            await self.emit(
                "tool.invoke.result",
                {
                    "invocation_id": call_id,
                    "tool_name": call["name"],
                    "status": "cancelled",
                    "output_type": "empty",
                },
            )
        payload: dict[str, Any] = {"tool_invocations": self.tool_count}
        data = _dump(usage) if usage is not None else {}
        payload["input_tokens"] = int(data.get("inputTokens") or 0)
        payload["output_tokens"] = int(data.get("outputTokens") or 0)
        for ours, theirs in (
            ("reasoning_tokens", "thoughtTokens"),
            ("cache_read_tokens", "cachedReadTokens"),
            ("cache_write_tokens", "cachedWriteTokens"),
        ):
            if data.get(theirs):
                payload[ours] = int(data[theirs])
        if self.cost_total != self.cost_so_far:
            payload["cost_usd"] = round(max(0.0, self.cost_total - self.cost_so_far), 8)
        if not data:
            payload["estimated"] = True  # this agent reports no token counts
        if self.context is not None:
            payload["context_tokens"], payload["context_window"] = self.context
        await self.emit("session.usage", payload)
        await self.states.set(AgentState.ERROR if stop == "error" else AgentState.IDLE)


def content_text(content: list[dict[str, Any]]) -> str:
    parts = []
    for item in content:
        inner = item.get("content") or {}
        if item.get("type") == "content" and inner.get("type") == "text":
            parts.append(str(inner.get("text", "")))
    return "\n".join(parts)


def relative(path: str, workspace: Path | None) -> str:
    """A path the agent reported, relative to the workspace when it lies inside it."""
    if workspace is not None and path:
        with contextlib.suppress(ValueError):
            return str(Path(path).relative_to(workspace))
    return path


def unfenced(text: str) -> str:
    """File text some agents wrap in a Markdown code fence, without the fence."""
    lines = text.split("\n")
    if len(lines) >= 2 and lines[0].startswith("```") and lines[-1].strip() == "```":
        return "\n".join(lines[1:-1]) + "\n"
    return text


def result(
    call_id: str, call: dict[str, Any], *, failed: bool, workspace: Path | None = None
) -> dict[str, Any]:
    content = call.get("content") or []
    text = content_text(content)
    if not text and isinstance(call.get("raw_output"), str):
        text = call["raw_output"]
    payload: dict[str, Any] = {"invocation_id": call_id, "tool_name": call["name"]}
    if failed:
        return {
            **payload,
            "status": "error",
            "output_type": "text",
            "output": text,
            "error": {"code": "TOOL_ERROR", "message": text[:2000] or "the tool failed"},
        }
    diffs = [item for item in content if item.get("type") == "diff"]
    kind = call.get("kind")
    locations = call.get("locations") or []
    path = relative(str(locations[0].get("path", "")), workspace) if locations else ""
    if diffs:
        output_type, output = "diff", "".join(unified(d, workspace) for d in diffs)
    elif call["name"] in AGENT_TOOLS:
        output_type, output = "agent_result", {"content": text}
    elif kind == "read":
        output_type, output = "file_content", {"path": path, "content": unfenced(text)}
    elif kind == "search":
        files = [line for line in text.splitlines() if line.strip()]
        output_type, output = "file_list", {"files": files}
    elif kind == "fetch":
        output_type, output = "web_content", {"content": text}
    else:
        output_type, output = ("text", text) if text else ("empty", None)
    return {**payload, "status": "success", "output_type": output_type, "output": output}


def unified(diff: dict[str, Any], workspace: Path | None = None) -> str:
    path = relative(str(diff.get("path", "file")), workspace)
    old = diff.get("oldText")
    new = str(diff.get("newText", ""))
    lines = difflib.unified_diff(
        (old or "").splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile="/dev/null" if old is None else f"a/{path}",
        tofile=f"b/{path}",
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def plan_entries(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "content": str(entry.get("content", "")),
            "status": entry.get("status", "pending"),
            **({"priority": entry["priority"]} if entry.get("priority") else {}),
        }
        for entry in data.get("entries") or []
    ]


def commands(data: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for command in data.get("availableCommands") or []:
        entry: dict[str, Any] = {
            "name": str(command.get("name", "")),
            "description": str(command.get("description", "")),
        }
        hint = (command.get("input") or {}).get("hint")
        if hint:
            entry["parameters"] = [{"name": str(hint), "required": False}]
        out.append(entry)
    return out
