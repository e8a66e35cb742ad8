"""The outbox between a session and its socket's sender (client.sessions.outbox, issue 35)."""

from __future__ import annotations

import asyncio

from client.sessions.buffer import BufferedFrame
from client.sessions.outbox import CLOSE, Outbox


def _frame(n: int, size: int) -> BufferedFrame:
    return BufferedFrame(f"m{n}", "x" * size, size, n)


async def test_take_waits_for_a_frame_then_takes_what_is_queued_in_order():
    outbox = Outbox()
    taking = asyncio.create_task(outbox.take(1 << 20))
    await asyncio.sleep(0)
    assert not taking.done()  # nothing queued: the sender waits
    outbox.put(_frame(1, 10))
    outbox.put("greeting")
    batch, closing = await asyncio.wait_for(taking, 5)
    assert [getattr(item, "message_id", item) for item in batch] == ["m1", "greeting"]
    assert not closing
    assert outbox.pending_bytes == 10 + len("greeting")  # until the write says they went
    outbox.sent(batch)
    assert outbox.pending_bytes == 0


async def test_a_batch_stops_one_frame_past_its_byte_budget_and_at_close():
    outbox = Outbox()
    for n in range(5):
        outbox.put(_frame(n, 100))
    outbox.put(CLOSE)
    outbox.put(_frame(9, 1))  # after CLOSE: never taken by this sender
    batch, closing = await outbox.take(250)
    assert [item.message_id for item in batch] == ["m0", "m1", "m2"] and not closing
    batch, closing = await outbox.take(250)
    assert [item.message_id for item in batch] == ["m3", "m4"] and closing


async def test_a_cancelled_take_leaves_no_waiter_behind():
    outbox = Outbox()
    taking = asyncio.create_task(outbox.take(100))
    await asyncio.sleep(0)
    taking.cancel()
    await asyncio.gather(taking, return_exceptions=True)
    outbox.put(_frame(1, 1))  # wakes nobody, loses nothing
    batch, _ = await outbox.take(100)
    assert [item.message_id for item in batch] == ["m1"]
