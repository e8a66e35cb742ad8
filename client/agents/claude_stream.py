"""Claude Code's stream-json output → DPS events, one turn at a time (dps-profile §3–§7).

The CLI (with `--verbose --include-partial-messages`) writes one JSON object per line. What
becomes what:

* `stream_event` content blocks of the main agent: `text` / `thinking` deltas →
  `agent.{text,thinking}.delta` with a per-turn `content_index`, the block's stop → `.done`;
  a `redacted_thinking` block → `agent.thinking.done {redacted: true}` and no text;
* `assistant` messages: each `tool_use` block → `tool.invoke.request` with its complete input.
  Several tool_use blocks of one model message are one `parallel_group_id`; the requests of a
  message are held until the message ends (or the CLI asks about one of them) so the group is
  known when they go out. The CLI may run a tool, and write its result, before the model has
  finished streaming the message's next tool_use block (on a busy machine it does): a result for
  a held request of the message still streaming is held too, and goes out after its request.
  Text and thinking of an assistant message that was not streamed (older CLIs, recorded
  transcripts) are sent whole. Messages of a sub-agent
  (`parent_tool_use_id`) contribute their tool calls with `parent_invocation_id`; their text is
  the sub-agent's business and arrives as the Task tool's `agent_result`;
* `user` messages carrying `tool_result` blocks → `tool.invoke.result` (`claude_tools`);
* `rate_limit_event` (not `allowed`) and `system/api_retry` → `agent.error` warnings;
  `system/compact_boundary` → `session.context.compacted`;
* the `result` message → `session.usage` (the turn's tokens; `cost_usd` is the growth of the
  CLI's running `total_cost_usd`) and the stop reason; an error result → `agent.error`;
* context use (issue 30 §4): `session.usage.context_tokens` is what the main agent's last model
  call held — its input, cache-read and cache-written tokens (`message_start`, or the
  `assistant` message's `usage` when not streamed) plus its output (`message_delta`), which the
  next call reads back — and `context_window` is `result.modelUsage[<model>].contextWindow`.

`agent.state.changed` follows along: `thinking` while the model runs, `tool_calling` while
tools run, `awaiting_input` while an approval waits, `idle`/`error` at the end.
"""

from __future__ import annotations

from typing import Any

from client.agents.base import Emit
from client.agents.blocks import Blocks
from client.agents.claude_tools import result_payload
from client.agents.states import AgentStates
from rawp.agent_state import AgentState
from rawp.events import StopReason

STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "end_turn",
    "stop_sequence": "end_turn",
    "tool_use": "end_turn",
    "pause_turn": "end_turn",
    "max_tokens": "max_tokens",
    "refusal": "refusal",
}


class ClaudeTurn:
    """Maps the messages of one turn; `finish(result)` ends it and gives the stop reason."""

    def __init__(self, emit: Emit, *, cost_so_far: float = 0.0) -> None:
        self.emit = emit
        self.blocks = Blocks(emit)
        self.states = AgentStates(emit)
        self.tools: dict[str, tuple[str, dict[str, Any]]] = {}  # tool_use_id → (name, input)
        self.denied: set[str] = set()
        self.streamed: set[str] = set()  # message ids whose blocks came as stream events
        self.pending: list[tuple[str, dict[str, Any]]] = []  # (message id, request payload)
        self.streaming: str | None = None  # the main agent's message between start and stop
        self.held_results: list[dict[str, Any]] = []  # `user` messages waiting for a flush
        self.tool_count = 0
        self.cost_so_far = cost_so_far
        self.cost_total = cost_so_far
        self.context_in = self.context_out = 0  # the main agent's last model call
        self.model: str | None = None  # its model, whose context window the result names

    # --- the stream --------------------------------------------------------------------------

    async def feed(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "stream_event":
            await self._stream_event(message)
        elif kind == "assistant":
            await self._assistant(message)
        elif kind == "user":
            if self._answers_the_streaming_message(message):
                self.held_results.append(message)
                return
            await self.flush()
            await self._tool_results(message)
        elif kind == "rate_limit_event":
            await self._rate_limit(message.get("rate_limit_info") or {})
        elif kind == "system":
            await self._system(message)

    async def _stream_event(self, message: dict[str, Any]) -> None:
        if message.get("parent_tool_use_id"):
            return
        event = message.get("event") or {}
        kind = event.get("type")
        if message.get("api_message_id"):
            self.streamed.add(message["api_message_id"])
        if kind == "message_start":
            started = event.get("message") or {}
            self.streaming = started.get("id", "")
            self.streamed.add(self.streaming)
            self._call_usage(started)
            await self.states.set(AgentState.THINKING)
        elif kind == "content_block_start":
            block = event.get("content_block") or {}
            if block.get("type") in ("text", "thinking"):
                await self.blocks.start(block["type"])
            elif block.get("type") == "redacted_thinking":
                await self.blocks.redacted()
        elif kind == "content_block_delta":
            delta = event.get("delta") or {}
            if delta.get("type") == "text_delta":
                await self.blocks.delta("text", delta.get("text", ""))
            elif delta.get("type") == "thinking_delta":
                await self.blocks.delta("thinking", delta.get("thinking", ""))
        elif kind == "content_block_stop":
            await self.blocks.close()
        elif kind == "message_delta":
            output = (event.get("usage") or {}).get("output_tokens")
            if isinstance(output, int):
                self.context_out = output
        elif kind == "message_stop":
            self.streaming = None
            await self.flush()

    async def _assistant(self, message: dict[str, Any]) -> None:
        body = message.get("message") or {}
        message_id = str(body.get("id", ""))
        parent = message.get("parent_tool_use_id")
        if self.pending and self.pending[0][0] != message_id:
            await self.flush()
        synthetic = body.get("model") == "<synthetic>"  # the CLI's own error notes
        if not parent and not synthetic and message_id not in self.streamed:
            self._call_usage(body)
        for block in body.get("content") or []:
            kind = block.get("type")
            if kind == "tool_use":
                await self.blocks.close()
                request = {
                    "invocation_id": block["id"],
                    "tool_name": block.get("name", "tool"),
                    "input": block.get("input") or {},
                }
                if parent:
                    request["parent_invocation_id"] = parent
                self.tools[block["id"]] = (request["tool_name"], request["input"])
                self.pending.append((message_id, request))
            elif parent or synthetic or message_id in self.streamed:
                continue
            elif kind in ("text", "thinking"):
                await self.states.set(AgentState.THINKING)
                await self.blocks.delta(kind, block.get(kind, ""))
                await self.blocks.close()
            elif kind == "redacted_thinking":
                await self.blocks.redacted()

    def _call_usage(self, message: dict[str, Any]) -> None:
        """Context use: the tokens one main-agent model call read and wrote (module docstring)."""
        usage = message.get("usage")
        if not isinstance(usage, dict):
            return
        keys = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
        self.context_in = sum(int(usage.get(key) or 0) for key in keys)
        self.context_out = int(usage.get("output_tokens") or 0)
        if isinstance(message.get("model"), str):
            self.model = message["model"]

    def _answers_the_streaming_message(self, message: dict[str, Any]) -> bool:
        """Whether `message` holds a result for a held request of the message still streaming:
        more tool_use blocks of that message may follow, so its group is not known yet."""
        if self.streaming is None:
            return False
        waiting = {r["invocation_id"] for m, r in self.pending if m == self.streaming}
        content = (message.get("message") or {}).get("content")
        return isinstance(content, list) and any(
            isinstance(block, dict) and block.get("tool_use_id") in waiting for block in content
        )

    async def flush(self) -> None:
        """Send the held tool requests of one model message, grouped if there are several, then
        the results that were held for them."""
        held, self.pending = self.pending, []
        results, self.held_results = self.held_results, []
        if held:
            await self.blocks.close()
            await self.states.set(AgentState.TOOL_CALLING)
        group = f"group-{held[0][0]}" if len(held) > 1 else None
        for _message_id, request in held:
            if group:
                request["parallel_group_id"] = group
            self.tool_count += 1
            await self.emit("tool.invoke.request", request)
        for message in results:
            await self._tool_results(message)

    async def _tool_results(self, message: dict[str, Any]) -> None:
        content = (message.get("message") or {}).get("content")
        if not isinstance(content, list):
            return
        structured = message.get("tool_use_result")
        for block in content:
            if not isinstance(block, dict) or block.get("type") != "tool_result":
                continue
            tool_id = str(block.get("tool_use_id", ""))
            name, tool_input = self.tools.get(tool_id, ("tool", {}))
            await self.emit(
                "tool.invoke.result",
                result_payload(
                    tool_id,
                    name,
                    tool_input,
                    block.get("content"),
                    structured,
                    is_error=bool(block.get("is_error")),
                    denied=tool_id in self.denied,
                ),
            )

    async def _rate_limit(self, info: dict[str, Any]) -> None:
        status = info.get("status")
        if status in (None, "allowed"):
            return
        window = info.get("rateLimitType") or "usage"
        resets = f"; resets at {info['resetsAt']} (unix time)" if info.get("resetsAt") else ""
        message = (
            f"the {window} rate limit is reached{resets}"
            if status == "rejected"
            else f"close to the {window} rate limit{resets}"
        )
        await self.emit(
            "agent.error",
            {"code": "RATE_LIMIT", "message": message, "severity": "warning", "retryable": True},
        )

    async def _system(self, message: dict[str, Any]) -> None:
        subtype = message.get("subtype")
        if subtype == "api_retry":
            status = message.get("error_status")
            attempt, most = message.get("attempt"), message.get("max_retries")
            await self.emit(
                "agent.error",
                {
                    "code": "API_RETRY",
                    "message": f"the model API failed ({status or 'no answer'}); "
                    f"retry {attempt} of {most}",
                    "severity": "warning",
                    "retryable": True,
                },
            )
        elif subtype == "compact_boundary":
            meta = message.get("compact_metadata") or {}
            payload = {}
            if isinstance(meta.get("pre_tokens"), int):
                payload["before_tokens"] = meta["pre_tokens"]
            await self.emit("session.context.compacted", payload)

    # --- the end -----------------------------------------------------------------------------

    async def finish(self, result: dict[str, Any] | None, *, cancelled: bool) -> StopReason:
        await self.flush()
        await self.blocks.close()
        if result is not None:
            await self._usage(result)
        if cancelled:
            await self.states.set(AgentState.IDLE)
            return "cancelled"
        if result is None:
            await self.states.set(AgentState.ERROR)
            return "error"
        subtype = result.get("subtype")
        if subtype == "error_max_turns":
            await self.states.set(AgentState.IDLE)
            return "max_turn_requests"
        if result.get("is_error") or subtype != "success":
            await self.emit("agent.error", error_payload(result))
            await self.states.set(AgentState.ERROR)
            return "error"
        await self.states.set(AgentState.IDLE)
        return STOP_REASONS.get(str(result.get("stop_reason")), "end_turn")

    async def _usage(self, result: dict[str, Any]) -> None:
        usage = result.get("usage") or {}
        payload: dict[str, Any] = {
            "input_tokens": int(usage.get("input_tokens") or 0),
            "output_tokens": int(usage.get("output_tokens") or 0),
            "tool_invocations": self.tool_count,
        }
        if usage.get("cache_read_input_tokens"):
            payload["cache_read_tokens"] = int(usage["cache_read_input_tokens"])
        if usage.get("cache_creation_input_tokens"):
            payload["cache_write_tokens"] = int(usage["cache_creation_input_tokens"])
        thinking = (usage.get("output_tokens_details") or {}).get("thinking_tokens")
        if thinking:
            payload["reasoning_tokens"] = int(thinking)
        total = result.get("total_cost_usd")
        if isinstance(total, int | float):
            # The CLI reports its running total; a turn's usage is a delta (dps-profile §7).
            self.cost_total = float(total)
            payload["cost_usd"] = round(max(0.0, self.cost_total - self.cost_so_far), 8)
        payload.update(self._context(result))
        await self.emit("session.usage", payload)

    def _context(self, result: dict[str, Any]) -> dict[str, int]:
        """`context_tokens` / `context_window` where the stream gave both (module docstring)."""
        used = self.context_in + self.context_out
        windows = {
            name: figures["contextWindow"]
            for name, figures in (result.get("modelUsage") or {}).items()
            if isinstance(figures, dict) and isinstance(figures.get("contextWindow"), int)
        }
        window = windows.get(self.model or "") or max(windows.values(), default=0)
        if not used or window <= 0:
            return {}
        return {"context_tokens": used, "context_window": window}


def error_payload(result: dict[str, Any]) -> dict[str, Any]:
    """An error `result` as `agent.error`: the API's words where there are some."""
    status = result.get("api_error_status")
    text = result.get("result") or "; ".join(str(e) for e in result.get("errors") or [])
    code = "MODEL_ERROR" if status else str(result.get("subtype") or "error").upper()
    retryable = status in (429, 500, 502, 503, 529) if status else None
    payload: dict[str, Any] = {
        "code": code,
        "message": str(text or "Claude Code reported an error")[:2000],
        "severity": "error",
    }
    if retryable is not None:
        payload["retryable"] = retryable
    return payload
