"""A conversation's session while the gateway is connected to it: link, renderer, pump.

`LiveSession` ties one `SessionLink` (the edge WebSocket) to one `SessionRenderer` through a
`ChatSession`, and runs the pump that renders every frame. It also answers what the chat needs
from the session besides rendering:

- `search_files(query)`: `control.file.search` → the matching `session.file.candidates`
  (K-10), answered within `timeout_s` or not at all (the autocomplete deadline of Discord is
  3 s, so an empty list beats a late one);
- `answer_stale(interaction_id, choice)`: the answer to a prompt posted before a gateway
  restart, sent as `control.interaction.response` (the request's `message_id` is no longer
  known, so `parent_id` is left out; the client matches by `interaction_id`).

`on_end` is called once when the link ends for good (the session was terminated elsewhere, or
its node went away): the conversation layer marks the conversation ended and says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from gateway.edge_link import SessionLink
from gateway.platform import Choice
from gateway.render import SessionRenderer
from gateway.session import ChatSession
from rawp.clock import new_id
from rawp.events import FileCandidate, FileCandidates, FileSearch, InteractionResponse
from rawp.frames import Frame, make_frame

log = logging.getLogger(__name__)

SEARCH_TIMEOUT_S = 2.0


class _TappedLink:
    """The link as the renderer sees it, with candidates answers taken off on the way."""

    def __init__(self, link: SessionLink, tap: Callable[[Frame], None]) -> None:
        self._link = link
        self._tap = tap

    async def send(self, frame: Frame) -> None:
        await self._link.send(frame)

    async def receive(self) -> Frame | None:
        frame = await self._link.receive()
        if frame is not None:
            self._tap(frame)
        return frame


class LiveSession:
    def __init__(
        self,
        link: SessionLink,
        renderer: SessionRenderer,
        *,
        on_end: Callable[[LiveSession], Awaitable[None]] | None = None,
    ) -> None:
        self.link = link
        self.renderer = renderer
        self.chat = ChatSession(renderer, _TappedLink(link, self._tap))
        self._on_end = on_end
        self._searches: dict[str, asyncio.Future[list[FileCandidate]]] = {}
        self._pump: asyncio.Task[None] | None = None
        self._closing = False

    @property
    def pump(self) -> asyncio.Task[None] | None:
        """The task rendering the session's frames (running until the link ends)."""
        return self._pump

    @property
    def session_id(self) -> str:
        return self.link.session_id

    def start(self) -> None:
        self._pump = asyncio.create_task(self._run(), name=f"session-{self.session_id}")

    async def _run(self) -> None:
        try:
            await self.chat.pump()
        except Exception:
            log.exception("session %s: rendering stopped", self.session_id)
        finally:
            for future in self._searches.values():
                if not future.done():
                    future.set_result([])
            if not self._closing and self._on_end is not None:
                await self._on_end(self)

    async def close(self) -> None:
        """Let go of the session (the gateway stops, or the session was ended here)."""
        self._closing = True
        await self.link.close()
        if self._pump is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(self._pump, 10)

    def _tap(self, frame: Frame) -> None:
        if frame.type == "session.file.candidates" and isinstance(frame.payload, FileCandidates):
            future = self._searches.pop(frame.payload.query_id, None)
            if future is not None and not future.done():
                future.set_result(list(frame.payload.candidates))

    async def search_files(
        self, query: str, *, max_results: int = 20, timeout_s: float = SEARCH_TIMEOUT_S
    ) -> list[FileCandidate]:
        query_id = new_id()
        future: asyncio.Future[list[FileCandidate]] = asyncio.get_running_loop().create_future()
        self._searches[query_id] = future
        request = FileSearch(query_id=query_id, query=query, max_results=max_results)
        try:
            await self.link.send(
                make_frame("control.file.search", request, session_id=self.session_id)
            )
            return await asyncio.wait_for(future, timeout_s)
        except (TimeoutError, ConnectionError):
            return []
        finally:
            self._searches.pop(query_id, None)

    async def answer_stale(self, interaction_id: str, choice: Choice) -> None:
        response = InteractionResponse(
            interaction_id=interaction_id, option_id=choice.option_id, text=choice.text
        )
        await self.link.send(
            make_frame("control.interaction.response", response, session_id=self.session_id)
        )
