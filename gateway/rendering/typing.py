"""The typing heartbeat: keep a platform's "typing…" alive for a whole turn (G-NS-04/10, K-16).

A platform's typing indicator expires on its own (Discord after 10 s), so while a turn runs the
heartbeat triggers it again every `interval_s`, an interval shorter than the expiry
(`PlatformLimits.typing_refresh_s`; A-34: "shorter than", so 4 s for a 10 s expiry). It also
calls `on_tick` each round, which the renderer uses as its timer for the 30-second interim
status (G-NS-11). `stop()` ends it at once: a fatal error must not leave "typing…" behind
(G-NS-09). Time comes from the injected `sleep`, so tests never wait. Its loop is a task of
the `TaskOwner` it is given (the renderer's): nothing it starts outlives that owner.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from runtime.tasks import TaskOwner

log = logging.getLogger(__name__)

Sleep = Callable[[float], Awaitable[None]]
Action = Callable[[], Awaitable[None]]


class TypingHeartbeat:
    def __init__(
        self,
        trigger: Action,
        interval_s: float,
        owner: TaskOwner,
        *,
        sleep: Sleep = asyncio.sleep,
        on_tick: Action | None = None,
    ) -> None:
        if interval_s <= 0:
            raise ValueError("the typing interval must be positive")
        self._trigger = trigger
        self._interval = interval_s
        self._owner = owner
        self._sleep = sleep
        self._on_tick = on_tick
        self._task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def start(self) -> None:
        """Trigger now, then every `interval_s`; a second start is a no-op.

        The first trigger is awaited here, so typing shows before the caller renders anything
        else, even when a whole turn arrives in one burst.
        """
        if self.running:
            return
        self._task = self._owner.spawn(self._run(), name="typing heartbeat")
        await self._beat()

    async def stop(self) -> None:
        """Stop at once; no trigger happens after this returns."""
        task, self._task = self._task, None
        if task is None or task.done():
            return
        task.cancel()
        if task is asyncio.current_task():
            return  # stopped from its own on_tick: the cancel lands at the next await
        await asyncio.wait({task})  # its end, without its CancelledError landing here

    async def _run(self) -> None:
        while True:
            await self._sleep(self._interval)
            await self._beat()

    async def _beat(self) -> None:
        # Decorations are best effort: a failed typing call must not end the heartbeat.
        try:
            await self._trigger()
        except Exception:
            log.warning("typing trigger failed", exc_info=True)
        if self._on_tick is not None:
            try:
                await self._on_tick()
            except Exception:
                log.warning("typing tick failed", exc_info=True)
