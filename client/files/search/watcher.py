"""The client side of the watcher child process (watch_process.py explains why it is one)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

from runtime.tasks import TaskOwner

log = logging.getLogger(__name__)

WATCH_SCRIPT = str(Path(__file__).with_name("watch_process.py"))
STOP_GRACE_S = 2.0


class TreeWatcher:
    """Watches one root; hands every debounced batch of changes to `on_batch` in order.

    `ready` is set once the watch is in place; `stopped` once the watch ended for good (after
    `close()`, or after a failure, which is logged)."""

    def __init__(
        self,
        root: str,
        on_batch: Callable[[list[tuple[str, str]]], Awaitable[None]],
    ) -> None:
        self.root = root
        self._on_batch = on_batch
        self.ready = asyncio.Event()
        self.stopped = asyncio.Event()
        self._process: asyncio.subprocess.Process | None = None
        self._tasks = TaskOwner(f"file watcher {root}", log)  # its reader
        self._closing = False

    async def start(self) -> None:
        self._process = await asyncio.create_subprocess_exec(
            sys.executable,
            WATCH_SCRIPT,
            self.root,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            limit=1 << 20,
        )
        await self._tasks.start()
        self._tasks.spawn(self._read(), name="reader")

    async def _read(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        batch: list[tuple[str, str]] = []
        try:
            while line := await self._process.stdout.readline():
                try:
                    message = json.loads(line)
                except ValueError:
                    continue
                kind = message[0]
                if kind == "change":
                    batch.append((message[1], message[2]))
                elif kind == "batch":
                    changes, batch = batch, []
                    await self._on_batch(changes)
                elif kind == "ready":
                    self.ready.set()
                elif kind == "error":
                    log.warning("file watcher for %s failed: %s", self.root, message[1])
        except Exception:
            log.exception("file watcher for %s stopped", self.root)
        finally:
            if not self._closing:
                log.warning(
                    "file watcher for %s ended; the index falls back to re-walks", self.root
                )
            self.stopped.set()

    async def close(self) -> None:
        self._closing = True
        process = self._process
        if process is not None and process.returncode is None:
            if process.stdin is not None:
                process.stdin.close()  # the child stops when its stdin closes
            try:
                await asyncio.wait_for(process.wait(), STOP_GRACE_S)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):  # it ended meanwhile: reaped
                    process.kill()
                await process.wait()
        await self._tasks.close()  # the reader, at EOF now or cancelled
        self.stopped.set()
