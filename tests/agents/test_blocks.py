"""`client.agents.blocks.Blocks`: content indexes in order, and a thinking block's duration
timed by the injected clock (not the machine's), so it is exact under test."""

from __future__ import annotations

from client.agents.blocks import Blocks
from rawp.clock import FakeClock


async def test_a_thinking_block_lasts_what_the_clock_says_and_text_follows_it():
    clock, sent = FakeClock(), []

    async def emit(kind: str, payload: dict) -> None:
        sent.append((kind, payload))

    blocks = Blocks(emit, clock)
    await blocks.delta("thinking", "Hmm, ")
    clock.advance(2.5)
    await blocks.delta("thinking", "yes.")
    await blocks.delta("text", "Done.")
    await blocks.close()
    assert sent == [
        ("agent.thinking.delta", {"content_index": 0, "text": "Hmm, "}),
        ("agent.thinking.delta", {"content_index": 0, "text": "yes."}),
        ("agent.thinking.done", {"content_index": 0, "redacted": False, "duration_ms": 2500}),
        ("agent.text.delta", {"content_index": 1, "text": "Done."}),
        ("agent.text.done", {"content_index": 1, "text": "Done."}),
    ]
    assert blocks.texts == ["Done."]
