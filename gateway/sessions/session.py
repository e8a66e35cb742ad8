"""One chat conversation bound to one RAWP session: prompts out, frames in, rendered.

A `FrameLink` is one session's frames both ways. In the gateway it is the edge WebSocket's
`SessionLink` (gateway.edge_link), tapped by `ConnectedSession` (gateway.sessions.live); this module
needs only its two operations, so the tests (and adapters.console's own tests) drive a
`ChatSession` over an in-memory link.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Protocol

from gateway.platform import MessageRef
from gateway.rendering.render import SessionRenderer
from rawp.events import PromptCancel, PromptRequest
from rawp.frames import Frame, make_frame


class FrameLink(Protocol):
    """A session's frames in both directions (the edge WebSocket, §9.4)."""

    async def send(self, frame: Frame) -> None: ...

    async def receive(self) -> Frame | None:
        """The next frame for this session, never one whose `message_id` it delivered before
        (the gateway's one de-duplication point, dps-profile §8); None once the link is closed
        for good."""
        ...


class ChatSession:
    """Sends a conversation's prompts and cancels on `link`; renders what comes back."""

    def __init__(self, renderer: SessionRenderer, link: FrameLink) -> None:
        self.renderer = renderer
        self.link = link

    @property
    def session_id(self) -> str:
        return self.renderer.session_id

    async def send_prompt(
        self,
        request: PromptRequest,
        *,
        message: MessageRef | None = None,
        user_id: str | None = None,
        message_id: str | None = None,
    ) -> asyncio.Future[str]:
        """Send a prompt; the future resolves with its turn's `stop_reason` once rendered.
        `message_id`: the frame's, when a retry must be recognised as the same prompt."""
        frame = make_frame(
            "control.prompt.request", request, session_id=self.session_id, message_id=message_id
        )
        # Registered before sending, so a fast `session.turn.start` always finds its message.
        finished = self.renderer.expect_prompt(frame.message_id, message, user_id)
        try:
            await self.link.send(frame)
        except BaseException:
            self.renderer.queue.forget(frame.message_id)
            raise
        await self.renderer.queue.mark(frame.message_id)  # 🕒 if it waits (gateway.sessions.busy)
        return finished

    async def cancel(self, turn_id: str | None = None) -> None:
        """Stop the running turn (`control.prompt.cancel`; DPS §6)."""
        frame = make_frame(
            "control.prompt.cancel", PromptCancel(turn_id=turn_id), session_id=self.session_id
        )
        await self.link.send(frame)

    async def pump(self, rendered: Callable[[Frame], Awaitable[None]] | None = None) -> None:
        """Render every frame the link delivers until it closes; `rendered` is called after
        each frame's rendering is done (the durable cursor, gateway.sessions.live)."""
        try:
            while (frame := await self.link.receive()) is not None:
                await self.renderer.feed(frame)
                if rendered is not None:
                    await rendered(frame)
        finally:
            await self.renderer.close()
