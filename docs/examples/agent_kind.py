"""A skeleton fifth agent kind: answers every prompt with its own text, in two deltas.

Copy this to `client/agents/<kind>.py`, register it in `client.agents.KINDS`, and replace
`prompt` with the real agent's turn (docs/architecture.md, "Adding an agent kind"). What it
keeps from the seam (client/agents/base.py docstring): `convert` writes file tokens as their
`display_path` when the kind cannot use files (F-ADPT-05); `prompt` emits DPS events through
`self.emit` and returns a `stop_reason`; `cancel` makes the running `prompt` return
"cancelled"; processes, if any, start through `self.processes`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from client.agents.base import Agent, Prompt, Reference
from rawp.events import InteractionResponse, StopReason
from rawp.fileref import Part, to_literal


class EchoAgent(Agent):
    kind = "echo"

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._cancelled = asyncio.Event()

    def convert(
        self,
        message_id: str,
        parts: Sequence[Part],
        references: Sequence[Reference],
        input_type: str,
    ) -> Prompt:
        # This kind reads no files: every token becomes its display_path (F-ADPT-05).
        return Prompt(message_id, to_literal(parts), (), input_type)

    async def prompt(self, prompt: Prompt) -> StopReason:
        self._cancelled.clear()
        half = len(prompt.text) // 2
        for piece in (prompt.text[:half], prompt.text[half:]):
            if self._cancelled.is_set():
                return "cancelled"
            await self.emit("agent.text.delta", {"content_index": 0, "text": piece})
        await self.emit("agent.text.done", {"content_index": 0, "text": prompt.text})
        return "end_turn"

    async def cancel(self) -> None:
        self._cancelled.set()

    async def respond(self, response: InteractionResponse) -> None:
        return None  # this kind never asks (no agent.interaction.request)

    async def close(self) -> None:
        await self.cancel()  # nothing started through self.processes to terminate
