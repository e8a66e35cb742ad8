"""The console chat loop: read a prompt, render its turn, read the next.

The next line is read only once the turn has been rendered to its end, because while it runs
the input belongs to the turn's own prompts (approvals): one line per prompt, in order, which is
what a pipe or a script feeding stdin needs.

The loop and the session's pump run as a `race` (runtime.tasks): when the input ends the pump is
stopped (if it is this loop's own), and when the pump ends (the session's link closed) the loop
stops at once, even while it waits for input; a failure of either is raised here, once.
"""

from __future__ import annotations

import asyncio

from adapters.console.composer import ConsoleComposer
from adapters.console.platform import ConsolePlatform
from gateway.sessions.session import ChatSession
from runtime.tasks import race


async def run_chat(
    platform: ConsolePlatform,
    composer: ConsoleComposer,
    session: ChatSession,
    *,
    pump: asyncio.Task[None] | None = None,
) -> int:
    """Chat until the input ends or the session's link closes; the number of prompts sent.

    `pump` is the task already rendering the session (the conversation layer runs one per live
    session, and it outlives this loop); without it, the session is pumped here for as long as
    the loop runs.
    """
    sent = [0]
    chatting = _chat(platform, composer, session, sent)
    if pump is None:
        await race(chatting, session.pump())
    else:
        await race(chatting, asyncio.wait({pump}))  # waits for the pump, never cancels it
    return sent[0]


async def _chat(
    platform: ConsolePlatform, composer: ConsoleComposer, session: ChatSession, sent: list[int]
) -> None:
    while (prompt := await composer.next_prompt()) is not None:
        finished = await session.send_prompt(
            prompt.request, message=prompt.message, user_id=platform.user_id
        )
        sent[0] += 1
        if await finished == "closed":  # the renderer closed first: the session is over
            return
