"""⏳ on the user's message once a turn has run a while (gateway.rendering.render rule 7).

Issue 19 §6.

G-NS-13 puts ⏳ → ✅ on the user's message to show progress. Typing (G-NS-04) already shows at
once that a turn started, so ⏳ is progress for a turn that takes a while (G-NS-11): it goes on
after `after_s`, and a short turn ends with ✅ alone — one reaction call instead of three
(Discord and Slack have no call that swaps one reaction for another). Rules:

1. `arm` starts the timer (a task of the renderer's `TaskOwner`, time from the injected
   `sleep`); when it fires while the turn is still the current one, ⏳ goes on.
2. `disarm` (turn end) stops a timer not yet due, so ⏳ never goes on after the turn ended; a
   ⏳ already on its way is waited for, so its removal cannot overtake it.
3. `Turn.working_shown` says whether ⏳ may be on, and so whether the end takes it off; it is
   set before the call goes out, and for a turn joined after a gateway restart (the process
   that started it may have put ⏳ on).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from gateway.platform import MessageRef
from gateway.rendering.turn import WORKING, Turn
from gateway.rendering.typing import Sleep
from runtime.tasks import TaskOwner

React = Callable[[MessageRef | None, str], Awaitable[None]]


class WorkingMark:
    def __init__(self, react: React, owner: TaskOwner, after_s: float, sleep: Sleep) -> None:
        self._react = react
        self._owner = owner
        self._after = after_s
        self._sleep = sleep

    def arm(self, turn: Turn, is_current: Callable[[Turn], bool]) -> None:
        """Rule 1: ⏳ after `after_s`, if `turn` is still running then."""
        if turn.user_message is None or turn.working_shown or turn.working_timer is not None:
            return
        turn.working_timer = self._owner.spawn(self._later(turn, is_current), name="⏳ timer")

    async def disarm(self, turn: Turn) -> None:
        """Rule 2: the turn ended."""
        timer, turn.working_timer = turn.working_timer, None
        if timer is None or timer.done():
            return
        if not turn.working_shown:
            timer.cancel()
        await asyncio.wait({timer})

    async def _later(self, turn: Turn, is_current: Callable[[Turn], bool]) -> None:
        await self._sleep(self._after)
        if is_current(turn):
            turn.working_shown = True  # rule 3: before the call, which may still be in flight
            await self._react(turn.user_message, WORKING)
