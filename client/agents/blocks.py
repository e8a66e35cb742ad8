"""Text and thinking blocks of one turn, numbered by `content_index` (dps-profile §3).

Every agent kind streams text and reasoning in pieces. `Blocks` turns those pieces into
`agent.{text,thinking}.delta` events and closes each block with its `.done` event:

* `content_index` counts blocks within the turn (0, 1, 2, …), text and thinking alike, so an
  edge can render "thought, answer, thought, answer" in order;
* a block is closed when the next block starts, when a tool call starts (`close()`), or at the
  end of the turn; `agent.text.done` carries the whole text, `agent.thinking.done` the time the
  thought took and whether it was redacted (then no text was ever sent, DPS §4).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from client.agents.base import Emit
from rawp.clock import SYSTEM_CLOCK, Clock

BlockKind = Literal["text", "thinking"]


@dataclass
class _Open:
    kind: BlockKind
    index: int
    text: str
    started: float
    redacted: bool = False


class Blocks:
    def __init__(self, emit: Emit, clock: Clock = SYSTEM_CLOCK) -> None:
        self.emit = emit
        self.clock = clock  # times a thinking block's `duration_ms`
        self.next_index = 0
        self.open: _Open | None = None
        self.texts: list[str] = []  # the whole text of every closed text block, in order

    async def delta(self, kind: BlockKind, text: str) -> None:
        """Append to the open block of `kind`, opening a new block when the kind changes."""
        if not text:
            return
        if self.open is None or self.open.kind != kind or self.open.redacted:
            await self.start(kind)
        assert self.open is not None
        self.open.text += text
        await self.emit(f"agent.{kind}.delta", {"content_index": self.open.index, "text": text})

    async def start(self, kind: BlockKind) -> int:
        """Close the open block and open an empty one; return its `content_index`."""
        await self.close()
        self.open = _Open(kind, self.next_index, "", self.clock.monotonic())
        self.next_index += 1
        return self.open.index

    async def redacted(self) -> None:
        """A thinking block whose content the agent may not show (redacted thinking)."""
        await self.close()
        index = self.next_index
        self.next_index += 1
        await self.emit(
            "agent.thinking.done", {"content_index": index, "redacted": True, "duration_ms": 0}
        )

    async def close(self) -> None:
        block, self.open = self.open, None
        if block is None:
            return
        if block.kind == "text":
            self.texts.append(block.text)
            await self.emit("agent.text.done", {"content_index": block.index, "text": block.text})
        else:
            elapsed = int((self.clock.monotonic() - block.started) * 1000)
            await self.emit(
                "agent.thinking.done",
                {"content_index": block.index, "redacted": False, "duration_ms": max(0, elapsed)},
            )

    @property
    def answer(self) -> str:
        """All text the turn produced so far, including the open block."""
        open_text = self.open.text if self.open is not None and self.open.kind == "text" else ""
        return "".join(self.texts) + open_text
