"""One example payload per event type: the catalogue in docs/protocol.md is built from these,
and the tests round-trip every one of them, so the documentation cannot drift from the code."""

from __future__ import annotations

from typing import Any

S = "3f1c2a9e-7b4d-4e21-9a57-1c0d2b3e4f50"  # session_id used in the examples
T = "9b2e4c61-2d3f-4a8b-8c7d-5e6f7a8b9c0d"  # turn_id
Q = "c4a1e2b3-5d6f-4789-8a0b-1c2d3e4f5a6b"  # query_id

EXAMPLES: dict[str, dict[str, Any]] = {
    "agent.text.delta": {"content_index": 1, "text": "The bug is in "},
    "agent.text.done": {"content_index": 1, "text": "The bug is in `verify()`: it never checks"},
    "agent.thinking.delta": {"content_index": 0, "text": "The user wants the auth bug…"},
    "agent.thinking.done": {"content_index": 0, "redacted": False, "duration_ms": 1840},
    "agent.state.changed": {"previous_state": "thinking", "current_state": "tool_calling"},
    "agent.interaction.request": {
        "interaction_id": "perm-1",
        "kind": "approval",
        "prompt": "Run `npm test`?",
        "options": [
            {"option_id": "allow", "label": "Allow once", "kind": "allow_once"},
            {"option_id": "deny", "label": "Deny", "kind": "reject_once"},
        ],
        "invocation_id": "call-7",
        "timeout_s": 300,
    },
    "agent.error": {
        "code": "AGENT_CRASHED",
        "message": "claude exited with status 1",
        "severity": "fatal",
        "retryable": False,
    },
    "agent.file": {
        "file_id": "f-1",
        "name": "plot.png",
        "mime_type": "image/png",
        "size_bytes": 4,
        "data": "iVBORw==",
        "chunk_index": 0,
        "final": True,
    },
    "agent.commands.publish": {
        "commands": [
            {"name": "compact", "description": "Summarise the conversation", "category": "session"},
            {
                "name": "review",
                "description": "Review a branch",
                "parameters": [{"name": "branch", "required": True}],
            },
        ]
    },
    "agent.plan.updated": {
        "entries": [
            {"content": "Reproduce the failure", "status": "completed"},
            {"content": "Fix verify()", "status": "in_progress", "priority": "high"},
        ]
    },
    "tool.catalog.publish": {
        "tools": [
            {"name": "Read", "description": "Read a file", "category": "read", "direct": False},
            {"name": "Bash", "description": "Run a command", "category": "execute"},
        ]
    },
    "tool.invoke.request": {
        "invocation_id": "call-7",
        "tool_name": "Bash",
        "input": {"command": "npm test"},
        "title": "npm test",
        "parallel_group_id": "grp-2",
    },
    "tool.invoke.stream": {
        "invocation_id": "call-7",
        "stream": "stdout",
        "text": "PASS src/auth.test.ts\n",
        "mode": "append",
    },
    "tool.invoke.result": {
        "invocation_id": "call-8",
        "tool_name": "Edit",
        "status": "success",
        "output_type": "diff",
        "output": "--- a/src/auth.ts\n+++ b/src/auth.ts\n@@ -1 +1 @@\n-return true\n+return ok\n",
        "duration_ms": 12,
    },
    "control.prompt.request": {
        "prompt_text": "find the bug in <@file:ref_0|src/auth.ts>",
        "input_type": "text",
        "file_references": [
            {"ref_id": "ref_0", "path": "src/auth.ts", "display_path": "src/auth.ts"}
        ],
        "context_files": [],
    },
    "control.prompt.cancel": {"turn_id": T},
    "control.interaction.response": {"interaction_id": "perm-1", "option_id": "allow"},
    "control.context.compact": {"instructions": "keep the failing test names"},
    "control.mode.set": {"mode": "plan"},
    "control.model.set": {"model": "opus"},
    "control.config.set": {"config_id": "thought_level", "value": "high"},
    "control.file.search": {
        "query_id": Q,
        "query": "aut",
        "scope": "workspace",
        "max_results": 20,
        "filters": {"extensions": [".ts"], "exclude_patterns": ["node_modules/**"]},
    },
    "control.file.search.cancel": {"query_id": Q},
    "session.turn.start": {
        "turn_id": T,
        "prompt_message_id": "0b6f8e2a-4c3d-4e5f-8a9b-0c1d2e3f4a5b",
    },
    "session.turn.end": {"turn_id": T, "stop_reason": "end_turn", "duration_ms": 5230},
    "session.usage": {
        "input_tokens": 1200,
        "output_tokens": 340,
        "cache_read_tokens": 800,
        "tool_invocations": 2,
        "cost_usd": 0.0123,
    },
    "session.context.compacted": {"before_tokens": 90000, "after_tokens": 12000},
    "session.capabilities": {
        "protocol": "rawp-dps-1.0",
        "events": ["agent.text.delta", "control.prompt.request"],
        "file_reference": {"search": True, "max_results": 50, "scopes": ["workspace"]},
        "input_types": ["text", "slash_command"],
        "tools_direct": False,
    },
    "session.history": {
        "since_message_id": "0b6f8e2a-4c3d-4e5f-8a9b-0c1d2e3f4a5b",
        "replayed": 42,
        "dropped": 0,
        "policy": "RING",
    },
    "session.error": {
        "code": "INVALID_FRAME",
        "message": "payload.text: Field required",
        "ref_message_id": "0b6f8e2a-4c3d-4e5f-8a9b-0c1d2e3f4a5b",
    },
    "session.file.candidates": {
        "query_id": Q,
        "candidates": [
            {
                "path": "src/auth.ts",
                "name": "auth.ts",
                "directory": "src",
                "extension": ".ts",
                "mime_type": "text/typescript",
                "size_bytes": 2048,
                "modified_at": "2026-12-01T09:30:00.000Z",
                "match_score": 0.92,
                "match_ranges": [{"start": 4, "end": 7}],
            }
        ],
        "total_count": 1,
        "truncated": False,
    },
    "node.config.changed": {
        "node_id": "node-5d2c",
        "changed_scope": "capabilities",
        "config_version": 4,
        "reason": "plugin_loaded: vision_v2",
    },
}

# Envelope fields each example frame carries besides its payload.
ENVELOPE_EXTRAS: dict[str, dict[str, str]] = {
    "session.file.candidates": {"parent_id": "0b6f8e2a-4c3d-4e5f-8a9b-0c1d2e3f4a5b"},
    "control.interaction.response": {"parent_id": "0b6f8e2a-4c3d-4e5f-8a9b-0c1d2e3f4a5b"},
}
