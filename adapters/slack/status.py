"""Typing and the status line on Slack, for `SlackPlatform` (its module docstring says the rules).

Both are `assistant.threads.setStatus` (it expires after 2 minutes; the heartbeat refreshes it
every 48 s). Slack removes the status itself when the app posts in the thread, so clearing a
status a post already removed is not sent (issue 19 §6). Where Slack refuses the method (not an
assistant thread, a missing scope, a deployment without it) the conversation falls back to one
status message that is edited as the status changes and deleted when it is cleared.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from gateway.platform import ConversationRef, MessageRef

log = logging.getLogger(__name__)
TYPING_STATUS = "is working…"
FALLBACK_STATUS = "⋯ working…"


class SlackStatus:
    """The status each conversation shows, and how (assistant status or a status message)."""

    def __init__(
        self,
        client: AsyncWebClient,
        send: Callable[[ConversationRef, str], Awaitable[MessageRef]],
        edit: Callable[[MessageRef, str], Awaitable[None]],
        delete: Callable[[MessageRef], Awaitable[None]],
    ) -> None:
        self.client = client
        self._send, self._edit, self._delete = send, edit, delete  # the fallback message's
        self._assistant_off: set[ConversationRef] = set()  # setStatus refused there
        self._status_up: set[ConversationRef] = set()  # a status shows: set, no post since
        self._status_text: dict[ConversationRef, str] = {}
        self._status_message: dict[ConversationRef, MessageRef] = {}

    def posted(self, conversation: ConversationRef) -> None:
        """The app posted in the thread: Slack took the assistant status down."""
        self._status_up.discard(conversation)

    async def typing(self, conversation: ConversationRef) -> None:
        status = self._status_text.get(conversation) or TYPING_STATUS
        shown = await self._assistant_status(conversation, status)
        if not shown and conversation not in self._status_message:
            await self._show_fallback(conversation, self._status_text.get(conversation))

    async def set(self, conversation: ConversationRef, text: str | None) -> None:
        if text is None:
            self._status_text.pop(conversation, None)
            if conversation not in self._status_up and conversation not in self._status_message:
                return  # nothing shows (never set, or a post took it down): no call
        else:
            self._status_text[conversation] = text
        if await self._assistant_status(conversation, text or ""):
            return
        if text is None:
            message = self._status_message.pop(conversation, None)
            if message is not None:
                await self._delete(message)
        else:
            await self._show_fallback(conversation, text)

    async def _assistant_status(self, conversation: ConversationRef, status: str) -> bool:
        """`assistant.threads.setStatus`; False where Slack refuses it (then: fallback)."""
        if conversation.thread_id is None or conversation in self._assistant_off:
            return False
        try:
            await self.client.assistant_threads_setStatus(
                channel_id=conversation.channel_id, thread_ts=conversation.thread_id, status=status
            )
            if status:
                self._status_up.add(conversation)
            else:
                self._status_up.discard(conversation)
            return True
        except SlackApiError as refused:
            log.info(
                "setStatus refused (%s): using a status message", refused.response.get("error")
            )
            self._assistant_off.add(conversation)
            return False

    async def _show_fallback(self, conversation: ConversationRef, text: str | None) -> None:
        shown = text or FALLBACK_STATUS
        message = self._status_message.get(conversation)
        if message is None:
            self._status_message[conversation] = await self._send(conversation, shown)
        else:
            await self._edit(message, shown)
