"""A turn's status line, coalesced: the platform is told at most once per `every_s` (issue 19 §6).

The status line (Slack's assistant status, the console's `· text`; A-41, rule 6 of
gateway.rendering.render) follows the agent's states and running tools, which change many times a
second in a busy turn: before this, a short turn cost Slack ten `assistant.threads.setStatus` calls
for lines nobody could read. Rules:

1. A turn's first line goes out no sooner than `every_s` after its start: the typing indicator
   (G-NS-04) has just shown that the agent works, and a line that would stand for less than
   that is never read. A turn shorter than `every_s` sets no line at all.
2. After that, a change goes out at once when the last one went out at least `every_s` ago;
   otherwise it is held, and when the interval has passed the latest held text goes out (the
   ones in between are dropped: only the current state matters). A text equal to the one shown
   is not sent again.
3. `clear()` (turn end, fatal error: G-NS-08/09) drops what is held and clears the line at once:
   nothing at turn end waits on a timer. It is sent once per turn even when no line was set,
   because on Slack the typing indicator is the same status (the adapter skips the call when a
   post already cleared it).
4. Sends are serialized by the line's own lock, so a held text never lands after the clear; the
   held send is a task of the renderer's `TaskOwner`, like the typing heartbeat.
5. Sending is best effort (a decoration): the caller's `send` swallows its failures.

The interim status message (G-NS-11/12) is the same status as a chat message for a long turn:
after `interim_after_s` (30 s) it names what runs, is edited as the status changes and is deleted
when the turn ends. Its timer is the typing heartbeat's tick, so `InterimStatus` lives in the
renderer's driver, not in its pure core: the core says what the status reads
(`RenderCore.status_text`), `InterimStatus` decides when it shows. Rules:

6. Each tick of the heartbeat, once the current turn has run `after_s` and no fatal error stopped
   it, the message is shown (posted, or edited to the current text).
7. Once shown, each status change edits it at once; a platform that cannot edit gets it deleted
   and posted again. An unchanged text is not sent again.
8. Its posts are keyed by turn, not by frame (`interim_key`): a timer posts them, beside a
   frame's rendering (gateway.rendering.posting).
9. At turn end it is deleted; one posted before a gateway restart is known by its key only.
10. Shows and the deletion hold one lock, so a tick waiting for it cannot show the message of a
   turn that ended meanwhile. Every platform call is best effort (a decoration).
11. Once the turn's progress message is up (gateway.rendering.progress, issue 30 §4), which
   names the running tool itself, the interim message is deleted and not shown again.

`ProgressEdits` times the edits of a turn's progress message (issue 30 §4, render rule 5,
gateway.rendering.progress: its task list, plan, the tool running now and the context in
use), which changes with every tool a busy turn runs. The pure core asks for each change as
an `Edit(coalesce=True)`; this decides when one reaches the platform, the way the status line
does. Rules:

12. The message's post counts as its first send. After that an edit goes out at once when the
   last send of that message was at least `every_s` ago; otherwise it is held, and when the
   interval has passed the latest held text goes out (the ones in between are dropped: only the
   current state matters). A text equal to the one sent is not sent again.
13. `now(message, text)` (an edit without `coalesce`: the turn's last one, its final task state)
   drops what is held for that message and sends at once, unless the message already reads it:
   nothing at turn end waits on a timer (issue 19 §6).
14. Held sends are tasks of the renderer's `TaskOwner`; sends hold one lock, so a held text never
   lands after the final one. The edits during a turn spend the platform budget
   (gateway.replicas.platform_budget) as a status, after any answer; the final one as the
   answer it ends. A failure is logged, not raised: the next edit or the final one repairs it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from gateway.platform import ChatPlatform, MessageRef
from gateway.rendering.posting import Poster
from gateway.rendering.turn import Turn
from gateway.rendering.typing import Sleep
from gateway.replicas.platform_budget import Priority, call_priority
from rawp.clock import Clock
from runtime.tasks import TaskOwner

Send = Callable[[str | None], Awaitable[None]]
log = logging.getLogger(__name__)


class StatusLine:
    def __init__(
        self, send: Send, owner: TaskOwner, every_s: float, *, clock: Clock, sleep: Sleep
    ) -> None:
        self._send = send
        self._owner = owner
        self._every = every_s
        self._clock = clock
        self._sleep = sleep
        self._lock = asyncio.Lock()
        self._held: asyncio.Task[None] | None = None
        self._wanted: str | None = None
        self._shown: str | None = None
        self._last_at = float("-inf")
        self._cleared = True  # no turn yet

    async def start(self) -> None:
        """A turn starts: rule 1's interval counts from now."""
        await self._drop_held()
        self._wanted = self._shown = None
        self._last_at = self._clock.monotonic()
        self._cleared = False

    async def want(self, text: str | None) -> None:
        """The line should read `text` (None: no line); sent now or held (rule 2)."""
        if self._cleared:
            return  # no turn, or its line was cleared for good (a fatal error)
        self._wanted = text
        if self._held is not None:
            return  # the held send will pick up the latest text
        wait = self._last_at + self._every - self._clock.monotonic()
        if wait > 0:
            self._held = self._owner.spawn(self._send_later(wait), name="status line")
            return
        await self._flush()

    async def clear(self) -> None:
        """Clear the line now, dropping any held text (rule 3); once per turn."""
        await self._drop_held()
        async with self._lock:
            if self._cleared:
                return
            self._cleared = True
            self._wanted = self._shown = None
            await self._send(None)

    async def _send_later(self, wait: float) -> None:
        await self._sleep(wait)
        self._held = None  # a change from now on is timed afresh, after this send
        await self._flush()

    async def _flush(self) -> None:
        async with self._lock:
            if self._cleared or self._wanted == self._shown:
                return
            self._shown = self._wanted
            self._last_at = self._clock.monotonic()
            await self._send(self._shown)

    async def _drop_held(self) -> None:
        held, self._held = self._held, None
        if held is not None and not held.done():
            held.cancel()
            await asyncio.wait({held})


BestEffort = Callable[[Awaitable[Any]], Awaitable[None]]
STILL_WORKING = "⏳ Still working…"


def interim_key(turn: Turn, index: int) -> str:
    """The post key of a turn's `index`-th interim status message (gateway.rendering.posting)."""
    return f"interim/{turn.turn_id}/{index}"


class InterimStatus:
    def __init__(
        self,
        platform: ChatPlatform,
        poster: Poster,
        *,
        current: Callable[[], Turn | None],
        status_text: Callable[[Turn], str | None],
        clock: Clock,
        after_s: float,
        best_effort: BestEffort,
    ) -> None:
        self._platform = platform
        self._poster = poster
        self._current = current
        self._status_text = status_text
        self._clock = clock
        self._after = after_s
        self._best_effort = best_effort
        self._lock = asyncio.Lock()

    async def tick(self) -> None:
        """Rule 6: each heartbeat."""
        turn = self._current()
        if turn is None or turn.fatal or turn.interim_retired:
            return
        if self._clock.monotonic() - turn.started_at >= self._after:
            async with self._lock:
                # the turn may have ended, or its progress message come, while this tick waited
                if self._current() is turn and not turn.interim_retired:
                    await self._show(turn)

    async def follow(self, turn: Turn) -> None:
        """Rule 7: the status changed."""
        if turn.status_message is not None and not turn.interim_retired:
            async with self._lock:
                await self._show(turn)

    async def retire(self, turn: Turn) -> None:
        """Rule 11: the progress message took over."""
        if turn.interim_retired:
            return
        await self.delete(turn)
        turn.interim_retired = True

    async def delete(self, turn: Turn) -> None:
        """Rule 9: the turn ended."""
        if turn.interim_retired:
            return  # deleted already (rule 11)
        async with self._lock:
            status = turn.status_message or await self._poster.recorded(interim_key(turn, 0))
            if status is not None:
                await self._best_effort(self._platform.delete_message(status))

    async def _show(self, turn: Turn) -> None:
        text = self._status_text(turn) or STILL_WORKING
        if text == turn.status_message_text:
            return
        turn.status_message_text = text
        # Issue 19 §5: the status line is a status in the platform budget, after any content.
        with call_priority(Priority.STATUS):
            platform = self._platform
            if turn.status_message is not None and platform.limits.supports_edit:
                await self._best_effort(platform.edit_message(turn.status_message, text))
                return
            if turn.status_message is not None:
                await self._best_effort(platform.delete_message(turn.status_message))
            key = interim_key(turn, turn.interim_posts)  # rule 8
            turn.interim_posts += 1
            turn.status_message = await self._poster.send(text, key=key)


EditMessage = Callable[[MessageRef, str], Awaitable[None]]


@dataclass
class _Shown:
    sent: str
    last_at: float
    wanted: str | None = None
    held: asyncio.Task[None] | None = None


class ProgressEdits:
    def __init__(
        self, edit: EditMessage, owner: TaskOwner, every_s: float, *, clock: Clock, sleep: Sleep
    ) -> None:
        self._edit = edit
        self._owner = owner
        self._every = every_s
        self._clock = clock
        self._sleep = sleep
        self._lock = asyncio.Lock()
        self._messages: dict[str, _Shown] = {}  # message_id → what it shows

    def posted(self, message: MessageRef, text: str) -> None:
        """Rule 1: the message was just posted reading `text`."""
        self._messages[message.message_id] = _Shown(text, self._clock.monotonic())

    async def want(self, message: MessageRef, text: str) -> None:
        """Rule 1: `message` should read `text`, now or once the interval has passed."""
        shown = self._messages.setdefault(message.message_id, _Shown("", float("-inf")))
        shown.wanted = text
        if shown.held is not None:
            return  # the held send will pick up the latest text
        wait = shown.last_at + self._every - self._clock.monotonic()
        if wait > 0:
            shown.held = self._owner.spawn(self._later(message, shown, wait), name="progress")
            return
        await self._flush(message, shown)

    async def now(self, message: MessageRef, text: str) -> None:
        """Rule 2: the final text, at once."""
        shown = self._messages.setdefault(message.message_id, _Shown("", float("-inf")))
        held, shown.held = shown.held, None
        if held is not None and not held.done():
            held.cancel()
            await asyncio.wait({held})
        shown.wanted = text
        await self._flush(message, shown, Priority.ANSWER)

    async def _later(self, message: MessageRef, shown: _Shown, wait: float) -> None:
        await self._sleep(wait)
        shown.held = None  # a change from now on is timed afresh, after this send
        await self._flush(message, shown)

    async def _flush(
        self, message: MessageRef, shown: _Shown, priority: Priority = Priority.STATUS
    ) -> None:
        async with self._lock:
            text = shown.wanted
            if text is None or text == shown.sent:
                return
            shown.sent, shown.last_at = text, self._clock.monotonic()
            try:
                with call_priority(priority):
                    await self._edit(message, text)
            except Exception:
                log.warning("editing the progress message failed", exc_info=True)
