"""Markdown views of tools, diffs and task lists for message-based platforms (old §8.4).

Chat messages cannot collapse or colour, so each view is the closest markdown:

- a tool is one compact line — icon, name, what it worked on, duration (G-TOOL-15: collapsed
  by default); a failed, timed-out or cancelled tool is a ❌ line with its error (G-TOOL-14);
- tools sharing a `parallel_group_id` share one message (G-TOOL-04);
- a diff (`output_type: diff`, or text that looks like a unified diff in its first 10 lines,
  G-DIFF-01/03) follows its line as a ```diff block, whose +/- prefixes the platforms colour
  (G-DIFF-04/05/13), with a bold header per file when it spans several (G-DIFF-09);
- a task list (`structured` output `{tasks: [...]}`, DPS §8) or plan (`agent.plan.updated`)
  is one line per task with ○ ◐ ● ✕, children indented under their parent (G-TASK-02/03);
- the progress message (issue 30 §4) is the turn's plan and task list, the tool running now and
  the context in use, in one message the renderer edits in place.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from rawp.events import PlanEntry, Task, ToolInvokeRequest, ToolInvokeResult

TASK_MARKS = {"pending": "○", "in_progress": "◐", "completed": "●", "cancelled": "✕"}
STATUS_WORDS = {"error": "failed", "timeout": "timed out", "cancelled": "cancelled"}
# The input keys that best say what a tool worked on, in order of preference.
SUBJECT_KEYS = (
    "command",
    "file_path",
    "path",
    "pattern",
    "query",
    "url",
    "description",
    "prompt",
)
SUBJECT_MAX = 60
_DIFF_SIGNATURE = re.compile(r"^(--- a/|\+\+\+ b/|@@ |diff --git )")


def shorten(text: str, limit: int = SUBJECT_MAX) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def subject(request: ToolInvokeRequest | None) -> str:
    """What a tool call worked on: its title, else its most telling input."""
    if request is None:
        return ""
    if request.title:
        return shorten(request.title)
    for key in SUBJECT_KEYS:
        value = request.input.get(key)
        if isinstance(value, str) and value.strip():
            return shorten(value)
    return ""


def _named(tool_name: str, request: ToolInvokeRequest | None) -> str:
    """`Edit (src/app.py)`. A title that begins with the tool's name (`Edit src/app.py`, as
    agents title their calls) loses that word here, so the name is not said twice (U-28); a
    title that is only the name gives way to the input."""
    what = subject(request)
    if request is not None and what:
        rest = _without_name(what, tool_name)
        what = rest if rest is not None else subject(request.model_copy(update={"title": None}))
    return f"{tool_name} ({what})" if what else tool_name


def _without_name(what: str, tool_name: str) -> str | None:
    """`what` without a leading `tool_name` word; None when nothing else is left."""
    if not tool_name or what[: len(tool_name)].casefold() != tool_name.casefold():
        return what
    rest = what[len(tool_name) :]
    if rest and not rest[0].isspace() and rest[0] not in ":-–—":
        return what  # `Editor …` is not the tool `Edit`
    rest = rest.lstrip(" \t:-–—")
    return rest or None


def running_line(requests: Sequence[ToolInvokeRequest], mark: str = "⏳") -> str:
    """The status text while tools run (G-TOOL-02/04); the progress message's line is marked
    🔧 (`progress_view`)."""
    if not requests:
        return f"{mark} Working…"
    if len(requests) == 1:
        return f"{mark} Running: {_named(requests[0].tool_name, requests[0])}"
    names = ", ".join(subject(r) or r.tool_name for r in requests)
    return f"{mark} Running {len(requests)} tools in parallel: {names}"


def progress_view(
    lists: Sequence[str], running: Sequence[ToolInvokeRequest], context: str | None
) -> str | None:
    """The turn's progress message (issue 30 §4): its plan and task list, the tool running now
    and the context in use; None while the turn has no list to show (gateway.rendering.render
    rule 5)."""
    if not lists:
        return None
    parts = list(lists)
    if running:
        parts.append(running_line(running, mark="🔧"))
    if context:
        parts.append(context)
    return "\n".join(parts)


def _seconds(ms: int | None) -> str:
    return f" · {ms / 1000:.1f} s" if ms is not None else ""


def result_line(request: ToolInvokeRequest | None, result: ToolInvokeResult) -> str:
    """One compact line for a finished tool (G-TOOL-12/14/15)."""
    name = _named(result.tool_name, request)
    took = _seconds(result.duration_ms)
    if result.status != "success":
        why = ""
        if result.error is not None:
            why = f": {shorten(result.error.message or result.error.code, 200)}"
        return f"❌ {name} {STATUS_WORDS[result.status]}{why}{took}"
    if result.output_type == "empty":
        return f"✅ {name} completed{took}"
    extra = ""
    if result.output_type == "web_content":
        url = _url_of(result.output) or (request.input.get("url") if request else None)
        extra = f" — <{url}>" if url else ""  # G-TOOL-10: the source URL MUST be shown
    elif result.output_type == "file_list" and isinstance(result.output, list):
        extra = f" — {len(result.output)} files"
    return f"✅ {name}{extra}{took}"


def _url_of(output: Any) -> str | None:
    if isinstance(output, dict):
        url = output.get("url") or output.get("source_url")
        return url if isinstance(url, str) else None
    return None


def result_detail(result: ToolInvokeResult) -> str | None:
    """What a result shows below its line, if anything: a diff or a task list."""
    if result.status != "success":
        return None
    tasks = task_list_of(result)
    if tasks is not None:
        return render_tasks(tasks)
    if result.output_type == "diff":
        return render_diff(_diff_text(result.output))
    if (
        result.output_type == "text"
        and isinstance(result.output, str)
        and looks_like_diff(result.output)
    ):
        return render_diff(result.output)
    return None


def task_list_of(result: ToolInvokeResult) -> list[Task] | None:
    """The tasks of a TodoWrite-style result (`structured`, `{tasks: [...]}`), else None."""
    output = result.output
    if result.output_type != "structured" or not isinstance(output, dict):
        return None
    raw = output.get("tasks")
    if not isinstance(raw, list):
        return None
    try:
        return [Task.model_validate(item) for item in raw]
    except ValueError:
        return None  # not a task list after all: shown as its compact line only


def looks_like_diff(text: str) -> bool:
    """G-DIFF-03: a unified-diff signature within the first 10 lines."""
    return any(_DIFF_SIGNATURE.match(line) for line in text.splitlines()[:10])


def _diff_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, dict):
        for key in ("diff", "unified_diff", "patch"):
            if isinstance(output.get(key), str):
                return output[key]
    return json.dumps(output, ensure_ascii=False, indent=2)


def code_block(content: str, language: str = "") -> str:
    """A fenced block whose fence no line of `content` can close (a `` ``` `` context line)."""
    longest = max((len(m.group(0)) for m in re.finditer(r"`{3,}", content)), default=2)
    fence = "`" * max(3, longest + 1)
    body = content if content.endswith("\n") else content + "\n"
    return f"{fence}{language}\n{body}{fence}"


def render_diff(diff: str) -> str:
    """```diff blocks, one per file with a bold header when the diff spans files (G-DIFF-09)."""
    sections = re.split(r"(?m)^(?=diff --git )", diff)
    sections = [s for s in sections if s]
    if len(sections) <= 1:
        return code_block(diff, "diff")
    out = []
    for section in sections:
        header = re.match(r"diff --git a/(\S+) b/(\S+)", section)
        path = header.group(2) if header else "changes"
        out.append(f"**{path}**\n{code_block(section, 'diff')}")
    return "\n".join(out)


def render_tasks(tasks: Sequence[Task]) -> str:
    """The task list as a tree, ○ pending, ◐ in progress, ● completed, ✕ cancelled."""
    by_parent: dict[str | None, list[Task]] = {}
    ids = {t.id for t in tasks}
    for task in tasks:
        parent = task.parent_id if task.parent_id in ids else None
        by_parent.setdefault(parent, []).append(task)
    done = sum(t.status == "completed" for t in tasks)
    lines = [f"📋 Tasks ({done}/{len(tasks)} done)"]
    seen: set[str] = set()

    def walk(parent: str | None, depth: int) -> None:
        for task in by_parent.get(parent, []):
            if task.id in seen:
                continue  # a parent_id cycle must not loop forever
            seen.add(task.id)
            lines.append("\u2003" * depth + _task_line(task.status, task.content))
            walk(task.id, depth + 1)

    walk(None, 0)
    for task in tasks:  # anything only reachable through a cycle still shows, flat
        if task.id not in seen:
            lines.append(_task_line(task.status, task.content))
    return "\n".join(lines)


def render_plan(entries: Sequence[PlanEntry]) -> str:
    done = sum(e.status == "completed" for e in entries)
    lines = [f"🗺️ Plan ({done}/{len(entries)} done)"]
    lines += [_task_line(e.status, e.content) for e in entries]
    return "\n".join(lines)


def _task_line(status: str, content: str) -> str:
    text = " ".join(content.split())
    styled = {
        "in_progress": f"**{text}**",
        "completed": f"~~{text}~~",
        "cancelled": f"*{text}*",
    }.get(status, text)
    return f"{TASK_MARKS[status]} {styled}"
