"""Lines from a text stream, read without blocking the event loop.

One daemon thread reads the stream and hands each line to the loop: a prompt that times out
never loses the line a later prompt will read, and a terminal waiting for input never keeps
the process from exiting. Works the same for a terminal, a pipe and `io.StringIO`.
"""

from __future__ import annotations

import asyncio
import threading
from typing import TextIO


class LineReader:
    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._queue: asyncio.Queue[str | None] = asyncio.Queue()
        self._started = False
        self._eof = False

    def _start(self) -> None:
        if self._started:
            return
        self._started = True
        loop = asyncio.get_running_loop()

        def hand_over(line: str | None) -> bool:
            try:
                loop.call_soon_threadsafe(self._queue.put_nowait, line)
            except RuntimeError:  # the loop has closed: nobody is listening any more
                return False
            return True

        def pump() -> None:
            while True:
                try:
                    line = self._stream.readline()
                except (OSError, ValueError):  # the stream was closed under us
                    line = ""
                if not line:
                    hand_over(None)
                    return
                if not hand_over(line.rstrip("\r\n")):
                    return

        threading.Thread(target=pump, name="console-input", daemon=True).start()

    async def readline(self, timeout_s: float | None = None) -> str | None:
        """The next line without its line break; None at end of input or on timeout."""
        if self._eof:
            return None
        self._start()
        try:
            line = await asyncio.wait_for(self._queue.get(), timeout_s)
        except TimeoutError:
            return None
        if line is None:
            self._eof = True
        return line
