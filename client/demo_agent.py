"""`rawp demo-agent`: a deterministic jsonl script agent for tests and demos.

It speaks the script protocol of docs/agents.md: the prompt is in `RAWP_PROMPT`, referenced
files are its arguments, each stdout line is one DPS event and interaction responses arrive
as JSON lines on stdin. For every prompt it thinks briefly, publishes slash commands, makes one
`Edit` tool call whose result is a unified diff, publishes a task list (structured output),
answers with text that quotes the prompt and lists the files, and reports usage. A prompt
containing `long` gets an answer of more than 5,000 characters with several fenced code
blocks; one containing `approve` asks for an approval of its `Edit` call (the request names
the call's `invocation_id`, as a real agent's permission request does) and reports the choice.
One containing `sendfile` sends a small text report as an `agent.file` (one frame); one
containing `bigfile` sends a deterministic PNG of about 100 KB in pieces of 32 KiB (four
frames), as an agent splits a file below `max_frame_size`. One containing `fullcontext`
reports 85 % of a 200,000-token context in use with its usage (issue 30 §4), and its slash
command `/compact` compacts that context (`session.context.compacted`) and reports 6 % after.
`RAWP_DEMO_PAUSE` (seconds, default 0.05) is how long each step "thinks".
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import struct
import sys
import time
import zlib
from typing import Any

COMMANDS = [
    {"name": "review", "description": "Review the working tree", "category": "demo"},
    {
        "name": "explain",
        "description": "Explain a file",
        "category": "demo",
        "parameters": [{"name": "path", "required": True}],
    },
    {"name": "compact", "description": "Summarise the conversation", "category": "session"},
]


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="*", help="file references passed by the client")
    parser.set_defaults(handler=run)


def emit(type: str, payload: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"type": type, "payload": payload}) + "\n")
    sys.stdout.flush()


def pause() -> None:
    time.sleep(float(os.environ.get("RAWP_DEMO_PAUSE", "0.05")))


FILE_CHUNK_BYTES = 32 * 1024  # raw bytes per agent.file frame (base64 makes it 4/3 larger)


def report_text(prompt: str) -> bytes:
    lines = ["Demo report", "===========", "", f"Prompt: {prompt}", ""]
    lines += [f"- finding {n}: everything checked out" for n in range(1, 6)]
    return ("\n".join(lines) + "\n").encode()


def demo_png(width: int = 200, height: int = 170) -> bytes:
    """A PNG of deterministic noise (it does not compress, so it stays about 100 KB)."""
    state, rows = 12345, []
    for _ in range(height):
        row = bytearray([0])  # filter type 0 for each scanline
        for _ in range(width * 3):
            state = (state * 1103515245 + 12345) & 0x7FFFFFFF
            row.append(state >> 23)
        rows.append(bytes(row))

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"".join(rows), 1))
        + chunk(b"IEND", b"")
    )


def send_file(file_id: str, name: str, mime_type: str, data: bytes) -> None:
    """One `agent.file` per FILE_CHUNK_BYTES of `data`, the last one `final` (DPS §4)."""
    pieces = [data[i : i + FILE_CHUNK_BYTES] for i in range(0, len(data), FILE_CHUNK_BYTES)]
    for index, piece in enumerate(pieces or [b""]):
        emit(
            "agent.file",
            {
                "file_id": file_id,
                "name": name,
                "mime_type": mime_type,
                "size_bytes": len(data),
                "data": base64.b64encode(piece).decode(),
                "chunk_index": index,
                "final": index == max(len(pieces), 1) - 1,
            },
        )


def unified_diff(path: str) -> str:
    return (
        f"--- a/{path}\n+++ b/{path}\n@@ -1,3 +1,3 @@\n"
        " def verify(token):\n-    return True\n+    return check_signature(token)\n"
        " # end\n"
    )


def long_answer() -> str:
    sections = []
    for n in range(1, 10):
        code = "\n".join(f"    step_{n}_{i} = compute({i}, {n})  # line {i}" for i in range(12))
        sections.append(
            f"## Part {n}\n\nThis part explains step {n} of the change in some detail, so "
            f"that the answer is long enough to be split across messages.\n\n"
            f"```python\ndef part_{n}():\n{code}\n    return step_{n}_0\n```\n"
        )
    return "\n".join(sections)


def answer_text(prompt: str, files: list[str], input_type: str) -> str:
    lines = []
    if input_type == "slash_command":
        lines.append(f"Ran the slash command {prompt.split()[0] if prompt.split() else '/'}.")
    lines.append(f'You said: "{prompt}"')
    lines.append("")
    if files:
        lines.append("Referenced files:")
        lines.extend(f"- {name}" for name in files)
    else:
        lines.append("No files were referenced.")
    text = "\n".join(lines) + "\n"
    if "long" in prompt:
        text += "\n" + long_answer()
    return text


def ask_approval(invocation_id: str) -> str:
    emit(
        "agent.interaction.request",
        {
            "interaction_id": "approve-1",
            "invocation_id": invocation_id,
            "kind": "approval",
            "prompt": "Apply the change to the workspace?",
            "options": [
                {"option_id": "allow", "label": "Allow once", "kind": "allow_once"},
                {"option_id": "deny", "label": "Deny", "kind": "reject_once"},
            ],
        },
    )
    emit(
        "agent.state.changed", {"previous_state": "tool_calling", "current_state": "awaiting_input"}
    )
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        payload = message.get("payload", {}) if isinstance(message, dict) else {}
        if payload.get("interaction_id") == "approve-1":
            return str(payload.get("option_id") or payload.get("text") or "none")
    return "none (no answer before stdin closed)"


def think() -> None:
    emit("agent.state.changed", {"previous_state": "idle", "current_state": "thinking"})
    emit("agent.thinking.delta", {"content_index": 0, "text": "Reading the prompt"})
    pause()
    emit("agent.thinking.delta", {"content_index": 0, "text": " and the files it names."})
    emit("agent.thinking.done", {"content_index": 0, "duration_ms": 50})
    emit("agent.commands.publish", {"commands": COMMANDS})


def use_tools(target: str, prompt: str) -> str | None:
    """One `Edit` of `target` (approved first when the prompt says `approve`) and a task list;
    the user's choice when one was asked for."""
    emit("agent.state.changed", {"previous_state": "thinking", "current_state": "tool_calling"})
    emit(
        "tool.invoke.request",
        {
            "invocation_id": "demo-edit-1",
            "tool_name": "Edit",
            "input": {"path": target},
            "title": f"Edit {target}",
        },
    )
    choice = ask_approval("demo-edit-1") if "approve" in prompt else None
    pause()
    emit(
        "tool.invoke.result",
        {
            "invocation_id": "demo-edit-1",
            "tool_name": "Edit",
            "status": "success",
            "output_type": "diff",
            "output": unified_diff(target),
            "duration_ms": 7,
        },
    )
    tasks = [
        {"id": "1", "content": "Read the prompt", "status": "completed"},
        {"id": "2", "content": f"Edit {target}", "status": "completed"},
        {"id": "3", "content": "Write the answer", "status": "in_progress"},
    ]
    emit("tool.invoke.request", {"invocation_id": "demo-todo-1", "tool_name": "TodoWrite"})
    emit(
        "tool.invoke.result",
        {
            "invocation_id": "demo-todo-1",
            "tool_name": "TodoWrite",
            "status": "success",
            "output_type": "structured",
            "output": {"tasks": tasks},
        },
    )
    return choice


def answer(prompt: str, files: list[str], input_type: str, choice: str | None) -> str:
    """The answer in 400-character deltas, then the files the prompt asked for; its text."""
    emit("agent.state.changed", {"previous_state": "tool_calling", "current_state": "thinking"})
    text = answer_text(prompt, files, input_type)
    if choice is not None:
        text = f"You chose: {choice}\n\n" + text
    for start in range(0, len(text), 400):
        emit("agent.text.delta", {"content_index": 1, "text": text[start : start + 400]})
        pause()
    emit("agent.text.done", {"content_index": 1, "text": text})
    if "sendfile" in prompt:
        send_file("demo-report", "report.txt", "text/plain", report_text(prompt))
    if "bigfile" in prompt:
        send_file("demo-plot", "plot.png", "image/png", demo_png())
    return text


FULL_CONTEXT, COMPACTED_CONTEXT, CONTEXT_WINDOW = 170_000, 12_000, 200_000


def context(prompt: str) -> dict[str, int]:
    """The context in use the usage reports: 85 % for `fullcontext`, 6 % after `/compact`."""
    if prompt.split()[:1] == ["/compact"]:
        compacted = {"before_tokens": FULL_CONTEXT, "after_tokens": COMPACTED_CONTEXT}
        emit("session.context.compacted", compacted)
        return {"context_tokens": COMPACTED_CONTEXT, "context_window": CONTEXT_WINDOW}
    if "fullcontext" in prompt:
        return {"context_tokens": FULL_CONTEXT, "context_window": CONTEXT_WINDOW}
    return {}


def run(args: argparse.Namespace) -> int:
    prompt = os.environ.get("RAWP_PROMPT", "")
    input_type = os.environ.get("RAWP_INPUT_TYPE", "text")
    files = list(args.files)
    think()
    choice = use_tools(files[0] if files else "src/app.py", prompt)
    text = answer(prompt, files, input_type, choice)
    used = {"input_tokens": len(prompt) // 4 + 1, "output_tokens": len(text) // 4 + 1}
    # A made-up price (a dollar per 10,000 tokens) so usage and budgets show a cost in demos.
    cost = round((used["input_tokens"] + used["output_tokens"]) / 10_000, 6)
    emit("session.usage", {**used, "tool_invocations": 2, "cost_usd": cost, **context(prompt)})
    emit("agent.state.changed", {"previous_state": "thinking", "current_state": "idle"})
    return 0
