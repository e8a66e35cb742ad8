"""Claude Code's tools as DPS sees them: catalog categories and result shapes (DPS §5, §8).

`result_payload` turns one `tool_result` block (plus the CLI's structured `tool_use_result`,
when it sent one) into a `tool.invoke.result` payload whose `output_type` says how a chat
should show it:

| tools | output_type | output |
|---|---|---|
| Edit, MultiEdit, Write, NotebookEdit | `diff` | a unified diff (`--- a/path`, hunks) |
| Read | `file_content` | `{path, content, start_line?}` |
| Grep, Glob, LS | `file_list` | `{files: [...], truncated?}` (Grep in content mode: `text`) |
| WebFetch, WebSearch | `web_content` | `{url?, query?, content}` |
| TodoWrite | `structured` | `{tasks: [{id, content, status}]}` (DPS §8) |
| Task, Agent | `agent_result` | `{content}` |
| anything else | `text` | the tool's text |
"""

from __future__ import annotations

from typing import Any

from rawp.events import CatalogTool, ToolCategory

CATEGORIES: dict[str, ToolCategory] = {
    "Read": "read",
    "NotebookRead": "read",
    "Edit": "edit",
    "MultiEdit": "edit",
    "Write": "edit",
    "NotebookEdit": "edit",
    "Bash": "execute",
    "BashOutput": "execute",
    "KillShell": "execute",
    "Grep": "search",
    "Glob": "search",
    "LS": "search",
    "WebFetch": "fetch",
    "WebSearch": "fetch",
    "TodoWrite": "think",
    "Task": "delegate",
    "Agent": "delegate",
}

DESCRIPTIONS = {
    "Read": "Read a file",
    "Edit": "Edit a file (exact string replacement)",
    "MultiEdit": "Several edits to one file",
    "Write": "Write a file",
    "NotebookEdit": "Edit a Jupyter notebook cell",
    "Bash": "Run a shell command",
    "Grep": "Search file contents",
    "Glob": "Find files by pattern",
    "WebFetch": "Fetch a web page",
    "WebSearch": "Search the web",
    "TodoWrite": "Keep a task list",
    "Task": "Run a sub-agent",
}

DIFF_TOOLS = {"Edit", "MultiEdit", "Write", "NotebookEdit"}
LIST_TOOLS = {"Grep", "Glob", "LS"}
WEB_TOOLS = {"WebFetch", "WebSearch"}
AGENT_TOOLS = {"Task", "Agent"}
TASK_STATUSES = {"pending", "in_progress", "completed", "cancelled"}


def catalog() -> list[CatalogTool]:
    """The built-in tools, never `direct`: only the agent runs them (DPS §15)."""
    return [
        CatalogTool(name=name, description=text, category=CATEGORIES.get(name, "other"))
        for name, text in DESCRIPTIONS.items()
    ]


def block_text(content: Any) -> str:
    """The text of a `tool_result` content: a string, or a list of text/image blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            elif isinstance(block, dict):
                parts.append(f"[{block.get('type', 'block')}]")
        return "\n".join(parts)
    return "" if content is None else str(content)


def result_payload(
    invocation_id: str,
    tool_name: str,
    tool_input: dict[str, Any],
    content: Any,
    structured: Any,
    *,
    is_error: bool,
    denied: bool = False,
) -> dict[str, Any]:
    text = block_text(content)
    payload: dict[str, Any] = {"invocation_id": invocation_id, "tool_name": tool_name}
    if is_error:
        code = "PERMISSION_DENIED" if denied else "TOOL_ERROR"
        return {
            **payload,
            "status": "error",
            "output_type": "text",
            "output": text,
            "error": {"code": code, "message": text[:2000]},
        }
    info = structured if isinstance(structured, dict) else {}
    output_type, output = _shape(tool_name, tool_input, text, info)
    return {**payload, "status": "success", "output_type": output_type, "output": output}


def _shape(name: str, tool_input: dict[str, Any], text: str, info: dict[str, Any]):
    if name in DIFF_TOOLS:
        diff = unified_diff(info, tool_input)
        return ("diff", diff) if diff else ("text", text)
    if name == "Read":
        file = info.get("file") if isinstance(info.get("file"), dict) else {}
        output = {
            "path": file.get("filePath") or tool_input.get("file_path", ""),
            "content": file.get("content", text),
        }
        if file.get("startLine"):
            output["start_line"] = file["startLine"]
        return "file_content", output
    if name in LIST_TOOLS:
        if name == "Grep" and info.get("mode") == "content":
            return "text", info.get("content", text)
        files = info.get("filenames")
        if not isinstance(files, list):
            files = [line for line in text.splitlines() if line.strip()]
        output = {"files": files}
        if info.get("truncated"):
            output["truncated"] = True
        return "file_list", output
    if name in WEB_TOOLS:
        output = {"content": info.get("result") or text}
        if tool_input.get("url"):
            output["url"] = tool_input["url"]
        if tool_input.get("query"):
            output["query"] = tool_input["query"]
        return "web_content", output
    if name == "TodoWrite":
        return "structured", {"tasks": tasks(tool_input)}
    if name in AGENT_TOOLS:
        return "agent_result", {"content": text}
    return "text", text


def tasks(todo_input: dict[str, Any]) -> list[dict[str, Any]]:
    """TodoWrite's `todos` as DPS §8 tasks."""
    out = []
    for number, todo in enumerate(todo_input.get("todos") or []):
        if not isinstance(todo, dict):
            continue
        status = todo.get("status", "pending")
        out.append(
            {
                "id": str(todo.get("id") or number + 1),
                "content": str(todo.get("content", "")),
                "status": status if status in TASK_STATUSES else "pending",
            }
        )
    return out


def unified_diff(info: dict[str, Any], tool_input: dict[str, Any]) -> str:
    """A unified diff from the CLI's `structuredPatch` (Edit, MultiEdit, Write)."""
    path = str(info.get("filePath") or tool_input.get("file_path") or "file")
    hunks = info.get("structuredPatch")
    if info.get("type") == "create" and not hunks:
        lines = str(info.get("content", "")).splitlines()
        body = "".join(f"+{line}\n" for line in lines)
        return f"--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{len(lines)} @@\n{body}"
    if not isinstance(hunks, list) or not hunks:
        return ""
    out = [f"--- a/{path}\n", f"+++ b/{path}\n"]
    for hunk in hunks:
        if not isinstance(hunk, dict):
            continue
        out.append(
            f"@@ -{hunk.get('oldStart', 0)},{hunk.get('oldLines', 0)} "
            f"+{hunk.get('newStart', 0)},{hunk.get('newLines', 0)} @@\n"
        )
        out.extend(f"{line}\n" for line in hunk.get("lines") or [])
    return "".join(out)
