"""Keeping the garbage collector's pauses short on a master holding thousands of sockets.

Measured (issue 7 §2, bench/scale.py, docs/benchmarks.md): at 1,000 sessions the master
tracks ~450,000 objects (each session's sockets, tasks, coroutines, queues), and CPython's
full collection walks all of them: 100–400 ms with the whole relay stopped, every few seconds
while sessions are being opened — the cause of p99 frame latencies of 250–350 ms, where the
same run with the collector off stayed at 15 ms. Those collections freed almost nothing (0–56
objects): the walk is spent on objects that are alive.

The policy: after each full collection, `gc.freeze()` moves every survivor into the permanent
generation, which later collections skip; a full collection then walks only what was created
since, and its pause shrinks with it. So does every collection of the middle generation (1):
its survivors would otherwise pile up in the old generation until the next full collection
walks them all at once. At 10,000 sessions a burst of prompts leaves ~10 waiting objects a
session (each edge socket's next read), and the full collection that came after it stopped
the relay for 111–123 ms (issue 35, bench/scale.py with a gc callback); frozen as they
survive, no such walk comes. Freezing does not stop reference counting — frozen
objects are freed as usual when their last reference goes — only a *cycle* that becomes
garbage after freezing waits; so every `unfreeze_every` seconds the next full collection runs
over everything once (one long pause, then the cycles are gone). A leak is therefore bounded
by the cycles of a few minutes, and a long pause comes every few minutes instead of every few
seconds.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

UNFREEZE_EVERY = 600.0  # seconds between full walks that free frozen cycles


class FreezeSurvivors:
    def __init__(
        self,
        unfreeze_every: float = UNFREEZE_EVERY,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.unfreeze_every = unfreeze_every
        self._monotonic = monotonic
        self._last_unfreeze = monotonic()
        self.freezes = 0
        self.unfreezes = 0

    def __call__(self, phase: str, info: dict) -> None:
        generation = info.get("generation")
        if phase != "stop" or generation not in (1, 2):
            return
        now = self._monotonic()
        if generation == 2 and now - self._last_unfreeze >= self.unfreeze_every:
            gc.unfreeze()  # the next full collection walks everything, frozen cycles included
            self._last_unfreeze = now
            self.unfreezes += 1
        else:  # a middle collection's survivors too, before they reach a full one
            gc.freeze()
            self.freezes += 1


def install(unfreeze_every: float = UNFREEZE_EVERY) -> FreezeSurvivors:
    """For a long-running master process only (never in a test process: it changes the whole
    interpreter). Freezes what start-up made (modules, the app) at once."""
    policy = FreezeSurvivors(unfreeze_every)
    gc.collect()
    gc.freeze()
    gc.callbacks.append(policy)
    return policy
