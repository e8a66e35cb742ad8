"""The console chat loop: read a prompt, render its turn, read the next.

The next line is read only once the turn has been rendered to its end, because while it runs
the input belongs to the turn's own prompts (approvals): one line per prompt, in order, which is
what a pipe or a script feeding stdin needs.
"""

from __future__ import annotations

import asyncio
import contextlib

from adapters.console.composer import ConsoleComposer
from adapters.console.platform import ConsolePlatform
from gateway.session import ChatSession


async def run_chat(
    platform: ConsolePlatform,
    composer: ConsoleComposer,
    session: ChatSession,
    *,
    pump: asyncio.Task[None] | None = None,
) -> int:
    """Chat until the input ends or the session's link closes; the number of prompts sent.

    `pump` is the task already rendering the session (the conversation layer runs one per live
    session); without it, one is started here and stopped at the end.
    """
    owned = pump is None
    if pump is None:
        pump = asyncio.create_task(session.pump(), name="console-session")
    sent = 0
    try:
        while not pump.done():
            prompt = await composer.next_prompt()
            if prompt is None:
                break
            finished = await session.send_prompt(
                prompt.request, message=prompt.message, user_id=platform.user_id
            )
            sent += 1
            await asyncio.wait({finished, pump}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if owned:
            pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pump
    return sent
