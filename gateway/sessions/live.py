"""A conversation's session while the gateway is connected to it: link, renderer, pump.

`ConnectedSession` ties one `SessionLink` (the edge WebSocket) to one `SessionRenderer` through
a `ChatSession`, and runs the pump that renders every frame. It also answers what the chat needs
from the session besides rendering:

- `search_files(query)`: `control.file.search` → the matching `session.file.candidates`
  (K-10), answered within `timeout_s` or not at all (the autocomplete deadline of Discord is
  3 s, so an empty list beats a late one);
- `answer_stale(interaction_id, choice)`: the answer to a prompt posted before a gateway
  restart, sent as `control.interaction.response` (the request's `message_id` is no longer
  known, so `parent_id` is left out; the client matches by `interaction_id`).

`on_end` is called once when the link ends for good (the session was terminated elsewhere, or
its node went away): the conversation layer marks the conversation ended and says so. A
renderer fenced off by a lost lease (gateway.replicas.cluster rule 3) stops too, with `lease_lost`
set: another replica renders the session now, so nothing is ended or said.

The pump is a task of the `TaskOwner` given to `start` (the conversation layer's): a failure
in rendering is logged there once, with its traceback, and ends this session's pump only.

The durable cursor (issue 14 §4): after each frame is rendered, a `CursorKeeper` remembers it
as the session's cursor in the conversation store if it may be one — a frame from the client
(gateway.edge_link rule 5) after which the renderer is `settled` — and writes it at most every
`CURSOR_EVERY_FRAMES` frames or `CURSOR_EVERY_S` seconds, and always at a block's or a turn's
end, so a fast stream is not one commit per delta. A restarted gateway reconnects with it;
frames rendered after it are rendered again and post nothing twice (gateway.rendering.posting): the
cursor may lag, it is correct because re-rendering is.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from gateway.edge_link import SessionLink, moves_cursor
from gateway.platform import Choice
from gateway.rendering.render import SessionRenderer
from gateway.replicas.cluster import LeaseLost
from gateway.sessions.session import ChatSession
from gateway.storage.conversation_store import ConversationStore
from rawp.clock import SYSTEM_CLOCK, Clock, new_id
from rawp.events import (
    FileCandidate,
    FileCandidates,
    FileSearch,
    InteractionResponse,
    ModelSet,
    ModeSet,
)
from rawp.frames import Frame, make_frame
from runtime.logs import bind_session
from runtime.tasks import TaskOwner

log = logging.getLogger(__name__)

SEARCH_TIMEOUT_S = 2.0
CLOSE_WAIT_S = 10.0  # how long `close()` lets the pump finish rendering before cancelling it
CURSOR_EVERY_FRAMES = 64
CURSOR_EVERY_S = 0.5
# A frame that completes something visible: the cursor is written at once after it.
CURSOR_BOUNDARIES = frozenset(
    {"agent.text.done", "session.turn.end", "tool.invoke.result", "agent.interaction.request"}
)


class CursorKeeper:
    """The session's durable cursor: the last settled client frame, written spaced out."""

    def __init__(self, store: ConversationStore, session_id: str, clock: Clock = SYSTEM_CLOCK):
        self._store = store
        self._session_id = session_id
        self._clock = clock
        self._pending: str | None = None
        self._saved: str | None = None
        self._since_save = 0
        self._saved_at = clock.monotonic()

    async def rendered(self, frame: Frame, settled: bool) -> None:
        if not settled or not moves_cursor(frame):
            return  # the cursor stays where a restart can rebuild everything after it
        self._pending = frame.message_id
        self._since_save += 1
        # The first cursor is saved at once: without one, a restart reconnects from nothing
        # and misses whatever the session sent while the gateway was down.
        due = self._since_save >= CURSOR_EVERY_FRAMES or self._saved is None
        if due or frame.type in CURSOR_BOUNDARIES or self._elapsed() >= CURSOR_EVERY_S:
            await self.flush()

    def _elapsed(self) -> float:
        return self._clock.monotonic() - self._saved_at

    async def flush(self) -> None:
        if self._pending is None or self._pending == self._saved:
            return
        await self._store.save_cursor(self._session_id, self._pending)
        self._saved, self._since_save = self._pending, 0
        self._saved_at = self._clock.monotonic()


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


class ConnectedSession:
    def __init__(
        self,
        link: SessionLink,
        renderer: SessionRenderer,
        *,
        on_end: Callable[[ConnectedSession], Awaitable[None]] | None = None,
        store: ConversationStore | None = None,
    ) -> None:
        self.link = link
        self.renderer = renderer
        self.chat = ChatSession(renderer, _TappedLink(link, self._tap))
        self._on_end = on_end
        self._cursor = CursorKeeper(store, link.session_id) if store is not None else None
        self._searches: dict[str, asyncio.Future[list[FileCandidate]]] = {}
        self._pump: asyncio.Task[None] | None = None
        self._closing = False
        self.lease_lost = False

    @property
    def pump(self) -> asyncio.Task[None] | None:
        """The task rendering the session's frames (running until the link ends)."""
        return self._pump

    @property
    def session_id(self) -> str:
        return self.link.session_id

    def start(self, owner: TaskOwner) -> None:
        self._pump = owner.spawn(self._run(), name=f"session {self.session_id}")

    async def _run(self) -> None:
        bind_session(self.session_id)  # the pump's log lines name its session (runtime.logs)
        try:
            await self.chat.pump(self._rendered)
        except LeaseLost as lost:
            log.warning("%s", lost)
            self.lease_lost = True
        finally:
            for future in self._searches.values():
                if not future.done():
                    future.set_result([])
            if self._cursor is not None and not self.lease_lost:
                await self._cursor.flush()
            if not self._closing and self._on_end is not None:
                await self._on_end(self)

    async def _rendered(self, frame: Frame) -> None:
        if self._cursor is not None:
            await self._cursor.rendered(frame, self.renderer.settled)

    async def close(self) -> None:
        """Let go of the session (the gateway stops, or the session was ended here)."""
        self._closing = True
        await self.link.close()
        pump = self._pump
        if pump is None or pump is asyncio.current_task():
            return
        # The pump ends once the link does; one stuck on the platform is cancelled. Its own
        # failure was logged by its owner; `wait` neither raises it nor a cancellation here.
        _, running = await asyncio.wait({pump}, timeout=CLOSE_WAIT_S)
        if running:
            pump.cancel()
            await asyncio.wait(running)

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

    async def set_mode(self, mode_id: str) -> None:
        """`control.mode.set` (issue 30 §1); the agent's `session.capabilities` confirms it and
        the renderer shows it (gateway.rendering.render_core). Raises ConnectionError when the link
        is gone."""
        self.renderer.mode_line.wanted = mode_id
        await self.link.send(
            make_frame("control.mode.set", ModeSet(mode=mode_id), session_id=self.session_id)
        )

    async def set_model(self, model_id: str) -> None:
        """`control.model.set` (issue 30 §1), confirmed and shown like the mode."""
        self.renderer.model_line.wanted = model_id
        await self.link.send(
            make_frame("control.model.set", ModelSet(model=model_id), session_id=self.session_id)
        )

    async def answer_stale(self, interaction_id: str, choice: Choice) -> None:
        response = InteractionResponse(
            interaction_id=interaction_id, option_id=choice.option_id, text=choice.text
        )
        await self.link.send(
            make_frame("control.interaction.response", response, session_id=self.session_id)
        )
