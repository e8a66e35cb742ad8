"""A skeleton fifth agent kind: answers every prompt with its own text, in two deltas.

Copy this to `client/agents/<kind>.py`, register it in `client.agents.KINDS`, put its settings
model (here `EchoSettings`) in `client.agents.kinds.KIND_MODELS`, and replace
`prompt` with the real agent's turn (docs/architecture.md, "Adding an agent kind"). What it
keeps from the seam (client/agents/base.py docstring): `convert` writes file tokens as their
`display_path` when the kind cannot use files (F-ADPT-05); `prompt` emits DPS events through
`self.emit` and returns a `stop_reason`; `cancel` makes the running `prompt` return
"cancelled"; processes, if any, start through `self.processes`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Literal

from pydantic import Field

from client.agents.base import Agent, Prompt, Reference
from client.agents.kinds import AgentEntry
from rawp.events import InteractionResponse, StopReason
from rawp.fileref import Part, to_literal


class EchoSettings(AgentEntry):
    """The kind's `[agents.NAME]` table, validated once when the agents file loads: each
    field's type, default and what it accepts (a wrong value is one line naming them)."""

    kind: Literal["echo"] = "echo"
    pieces: int = Field(2, ge=1, description="how many deltas the answer comes in: 1 or more")


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
        text, count = prompt.text, self.spec.settings.pieces  # typed: validated at load
        size = -(-len(text) // count) or 1
        for piece in (text[i : i + size] for i in range(0, len(text), size)):
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
