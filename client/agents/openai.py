"""The `openai` agent kind: an OpenAI-compatible chat-completions endpoint, streamed.

Works with OpenAI, vLLM, Ollama, llama.cpp server and anything else that speaks
`POST {base_url}/chat/completions` with `stream: true`. Settings in the agents file:

* `base_url` (required) — e.g. `https://api.openai.com/v1`, `http://127.0.0.1:11434/v1`;
* `model` (required);
* `api_key_env` — the NAME of the environment variable holding the key (the key itself is
  never written in the agents file; an `api_key` setting is refused);
* `system_prompt`, `temperature`, `max_tokens`, `timeout` (seconds, default 300);
* `files` — `reference` (default: `[File: path]` in place of each file token, F-ADPT-03) or
  `inline` (the same, plus the file's text appended to the message, up to `inline_max_bytes`);
* `images` — `true` (default): prompt images go to the model as `image_url` parts with
  `data:` URLs (OpenAI vision format); `false` for a text-only model: they are saved as
  files instead and the user is told;
* `prices` — USD per million tokens: `{input = 2.5, output = 10, cached_input = 1.25}`; with
  it `session.usage.cost_usd` is computed, without it left out.

The mapping (dps-profile §3, §7): `delta.content` → text; `delta.reasoning` (vLLM, OpenRouter),
`delta.reasoning_content` (DeepSeek, llama.cpp) and `<think>…</think>` inside content (Ollama,
R1 distills) → thinking; the usage of the final chunk (`stream_options.include_usage`) →
`session.usage`; `finish_reason` → the stop reason. A stream cut before its end is an
`agent.error` and the turn ends `error`, with an estimated usage. No tools are sent: the model
only talks. The conversation (user and assistant text) is kept per session in memory.

Attachments other than images cannot be opened by a model that only talks: with `files =
"inline"` one that is UTF-8 text is inlined like a referenced file; any other is saved in the
workspace as usual, but the user is told (`ATTACHMENT_NOT_DELIVERED`) that the model got only
its path.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from client.agents.base import Agent, Prompt, Reference
from client.agents.blocks import Blocks
from client.agents.kinds import OpenAISettings
from client.agents.sse import ThinkSplitter, sse_events
from client.agents.states import AgentStates
from rawp.agent_state import AgentState
from rawp.attachments import IMAGE_TYPES
from rawp.events import InteractionResponse, StopReason
from rawp.fileref import FileToken, Part, extract_paths, to_generic_llm

FINISH_REASONS: dict[str, StopReason] = {
    "stop": "end_turn",
    "length": "max_tokens",
    "content_filter": "refusal",
    "tool_calls": "end_turn",
    "function_call": "end_turn",
}


def _is_text(path: Path) -> bool:
    try:
        path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return True


def _text_of(content: str | list[dict[str, Any]]) -> str:
    """The text of a message's content, its parts' text joined (images count as nothing)."""
    if isinstance(content, str):
        return content
    return "".join(str(part.get("text", "")) for part in content)


async def _events_until_cut(resp: aiohttp.ClientResponse):
    """The SSE events of `resp`; a connection dropped mid-body just ends them (a cut stream)."""
    with contextlib.suppress(aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError):
        async for data in sse_events(resp.content):
            yield data


class OpenAIAgent(Agent):
    kind = "openai"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.settings: OpenAISettings = self.spec.settings  # type: ignore[assignment]
        self.history: list[dict[str, Any]] = []
        if self.settings.system_prompt:
            self.history.append({"role": "system", "content": self.settings.system_prompt})
        self._http: aiohttp.ClientSession | None = None
        # The running request's cancel scope: cancel() expires it, which stops the request and
        # nothing else (no task of its own to own).
        self._scope: asyncio.Timeout | None = None

    # --- prompt conversion (DPS §16.3, F-ADPT-03) --------------------------------------------

    def convert(
        self,
        message_id: str,
        parts: Sequence[Part],
        references: Sequence[Reference],
        input_type: str,
    ) -> Prompt:
        files = extract_paths(parts, references).paths
        by_id = {ref.ref_id: ref for ref in references}
        # A token whose file is unusable is written as its display_path (F-ADPT-05).
        usable = [
            p
            if not isinstance(p, FileToken) or (by_id.get(p.ref_id) and by_id[p.ref_id].path)
            else p.display_path
            for p in parts
        ]
        return Prompt(message_id, to_generic_llm(usable), tuple(files), input_type)

    def image_types(self) -> frozenset[str]:
        return IMAGE_TYPES if self.settings.images else frozenset()

    def _inlined(self, prompt: Prompt) -> list[str]:
        """The files whose text goes into the message: none unless `files = "inline"`; of the
        attachments, only those that are UTF-8 text."""
        if self.settings.files != "inline":
            return []
        attached = {a.path for a in prompt.attachments}
        return [p for p in prompt.files if p not in attached or _is_text(self.workspace / p)]

    async def _report_unread(self, prompt: Prompt, inlined: list[str]) -> None:
        for item in prompt.attachments:
            if item.path not in inlined:
                await self.not_delivered(
                    item.name,
                    f"this model cannot open files; it was saved as {item.path} and the model "
                    "got only that path",
                )

    def _user_message(self, prompt: Prompt, inlined: list[str]) -> str | list[dict[str, Any]]:
        text = self._with_files(prompt.text, inlined)
        if not prompt.images:
            return text
        parts: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        for image in prompt.images:
            url = f"data:{image.mime_type};base64,{image.data}"
            parts.append({"type": "image_url", "image_url": {"url": url}})
        return parts

    def _with_files(self, text: str, inlined: list[str]) -> str:
        if not inlined:
            return text
        budget = self.settings.inline_max_bytes
        sections = [text]
        for path in inlined:
            raw = (self.workspace / path).read_bytes()[: budget + 1]
            body = raw[:budget].decode("utf-8", errors="replace")
            cut = "\n[… cut]" if len(raw) > budget else ""
            sections.append(f"[File: {path}]\n```\n{body}{cut}\n```")
        return "\n\n".join(sections)

    # --- one turn -----------------------------------------------------------------------------

    async def prompt(self, prompt: Prompt) -> StopReason:
        inlined = self._inlined(prompt)
        await self._report_unread(prompt, inlined)
        prompt = await self.images_as_files(prompt)  # reported there; never inlined
        user = {"role": "user", "content": self._user_message(prompt, inlined)}
        blocks = Blocks(self.emit)
        states = AgentStates(self.emit)  # one turn: its first report has no previous state
        await states.set(AgentState.THINKING)
        # A session that ends cancels this task: that CancelledError passes through. cancel()
        # expires the scope instead, which ends the request as a TimeoutError raised here only
        # (_stream turns the HTTP client's own timeouts into "error" inside the scope).
        try:
            async with asyncio.timeout(None) as self._scope:
                stop = await self._stream([*self.history, user], blocks)
        except TimeoutError:
            stop = "cancelled"
        finally:
            self._scope = None
        await blocks.close()
        if stop in ("end_turn", "max_tokens", "refusal", "cancelled"):
            # What the user saw stays in the conversation, a cancelled answer included.
            self.history += [user, {"role": "assistant", "content": blocks.answer}]
        await states.set(AgentState.ERROR if stop == "error" else AgentState.IDLE)
        return stop

    async def _stream(self, messages: list[dict[str, Any]], blocks: Blocks) -> StopReason:
        body: dict[str, Any] = {
            "model": self.settings.model,
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        for key in ("temperature", "max_tokens"):
            if (value := getattr(self.settings, key)) is not None:
                body[key] = value
        url = self.settings.base_url.rstrip("/") + "/chat/completions"
        http = self._session()
        try:
            async with http.post(url, data=orjson.dumps(body), headers=self._headers()) as resp:
                if resp.status != 200:
                    return await self._http_error(resp)
                return await self._read(resp, blocks, messages)
        except (aiohttp.ClientError, TimeoutError) as exc:
            await self._error(
                "MODEL_UNREACHABLE",
                f"cannot reach {self.settings.base_url}: {type(exc).__name__} {exc}".strip(),
                retryable=True,
            )
            return "error"

    async def _read(
        self, resp: aiohttp.ClientResponse, blocks: Blocks, messages: list[dict[str, Any]]
    ) -> StopReason:
        splitter = ThinkSplitter()
        finish: str | None = None
        usage: dict[str, Any] | None = None
        done = False
        async for data in _events_until_cut(resp):
            if data.strip() == "[DONE]":
                done = True
                break
            try:
                chunk = orjson.loads(data)
            except orjson.JSONDecodeError:
                await self._error("MODEL_PROTOCOL", "the model sent an event that is not JSON")
                continue
            if isinstance(chunk.get("error"), dict):  # some servers report errors in-stream
                message = str(chunk["error"].get("message", "error"))
                await self._error("MODEL_ERROR", message, retryable=True)
                return "error"
            if isinstance(chunk.get("usage"), dict):
                usage = chunk["usage"]
            for choice in chunk.get("choices") or []:
                delta = choice.get("delta") or {}
                reasoning = delta.get("reasoning") or delta.get("reasoning_content")
                if isinstance(reasoning, str):
                    await blocks.delta("thinking", reasoning)
                if isinstance(delta.get("content"), str):
                    for kind, text in splitter.feed(delta["content"]):
                        await blocks.delta(kind, text)
                finish = choice.get("finish_reason") or finish
        for kind, text in splitter.flush():
            await blocks.delta(kind, text)
        await blocks.close()
        if not done and finish is None:
            await self._error(
                "MODEL_STREAM_CUT", "the model's stream ended before it finished", retryable=True
            )
            await self._usage(None, messages, blocks)
            return "error"
        await self._usage(usage, messages, blocks)
        return FINISH_REASONS.get(finish or "stop", "end_turn")

    # --- usage and cost (dps-profile §7) -----------------------------------------------------

    async def _usage(
        self, usage: dict[str, Any] | None, messages: list[dict[str, Any]], blocks: Blocks
    ) -> None:
        if usage is None:
            # No usage chunk (an old server, a cut stream): about four characters a token.
            prompt_chars = sum(len(_text_of(m["content"])) for m in messages)
            payload: dict[str, Any] = {
                "input_tokens": prompt_chars // 4,
                "output_tokens": len(blocks.answer) // 4,
                "estimated": True,
            }
        else:
            details = usage.get("prompt_tokens_details") or {}
            out_details = usage.get("completion_tokens_details") or {}
            payload = {
                "input_tokens": int(usage.get("prompt_tokens") or 0),
                "output_tokens": int(usage.get("completion_tokens") or 0),
            }
            if details.get("cached_tokens"):
                payload["cache_read_tokens"] = int(details["cached_tokens"])
            if out_details.get("reasoning_tokens"):
                payload["reasoning_tokens"] = int(out_details["reasoning_tokens"])
        cost = self._cost(payload)
        if cost is not None:
            payload["cost_usd"] = cost
        await self.emit("session.usage", payload)

    def _cost(self, usage: dict[str, Any]) -> float | None:
        prices = self.settings.prices
        if not prices:
            return None
        cached = usage.get("cache_read_tokens", 0)
        fresh = usage["input_tokens"] - cached
        cost = (
            fresh * prices.get("input", 0)
            + cached * prices.get("cached_input", prices.get("input", 0))
            + usage["output_tokens"] * prices.get("output", 0)
        ) / 1_000_000
        return round(cost, 8)

    # --- helpers -----------------------------------------------------------------------------

    def _session(self) -> aiohttp.ClientSession:
        if self._http is None:
            timeout = aiohttp.ClientTimeout(total=None, sock_read=self.settings.timeout)
            self._http = aiohttp.ClientSession(timeout=timeout)
        return self._http

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        env = self.settings.api_key_env
        key = os.environ.get(env) if env else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    async def _http_error(self, resp: aiohttp.ClientResponse) -> StopReason:
        text = (await resp.text(errors="replace"))[:500]
        with contextlib.suppress(ValueError, AttributeError, TypeError):
            text = str(orjson.loads(text)["error"]["message"])
        hint = ""
        if resp.status == 401 and not os.environ.get(self.settings.api_key_env or "-"):
            hint = f" (set {self.settings.api_key_env or 'api_key_env'} to the API key)"
        await self._error(
            f"MODEL_HTTP_{resp.status}",
            f"the model answered {resp.status}: {text}{hint}",
            retryable=resp.status == 429 or resp.status >= 500,
        )
        return "error"

    async def _error(self, code: str, message: str, *, retryable: bool = False) -> None:
        await self.emit(
            "agent.error",
            {"code": code, "message": message, "severity": "error", "retryable": retryable},
        )

    async def respond(self, response: InteractionResponse) -> None:
        """This kind never asks the user anything; a stray response is ignored."""

    async def cancel(self) -> None:
        scope, self._scope = self._scope, None
        if scope is not None:
            scope.reschedule(asyncio.get_running_loop().time())  # expire it now

    async def close(self) -> None:
        await self.cancel()
        if self._http is not None:
            await self._http.close()
            self._http = None
