"""Posting each message of a session once, across gateway restarts (issue 14 §4).

The renderer posts through a `Poster`. Every post has a deterministic key: the `message_id`
of the frame whose rendering makes it, and its place among that frame's posts (`<id>/0`,
`<id>/1`, …), or a key the renderer names for posts a timer makes (the interim status
message). Rules:

1. A key is recorded in the store (gateway.storage.conversation_store `posts`) before the next post
   is made: first as an intent, then with the platform's message id once the post returned.
2. A key already recorded with a message id is not posted again; its message is returned as
   if just posted (a task list is edited in place after a restart all the same). This is
   what makes re-rendering the frames a restarted gateway is replayed safe.
3. A key recorded only as an intent may or may not have reached the platform: the platform
   is asked (`find_keyed`, Slack message metadata) before posting again, and the post itself
   carries the key (`send_keyed`: Discord's `nonce` + `enforce_nonce`, which the platform
   de-duplicates), so the window between posting and recording is closed where the platform
   allows it.
4. Without a store (tests, a renderer on its own) posts go straight to the platform.
5. Uploads (files the agent sends) are posts like any other: keyed, recorded, not repeated.
   Discord de-duplicates a repeated upload by its nonce as it does a message; Slack's upload
   flow carries no metadata, so an upload whose record was lost to a crash may repeat there.

Frames render one at a time, so the per-frame counter is never shared by two frames; timer
posts never use it (they run beside a frame's rendering).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from gateway.platform import (
    ChatPlatform,
    ConversationRef,
    InteractionPrompt,
    MessageRef,
    ModeRow,
)
from gateway.storage.conversation_store import ConversationStore

HIDDEN = "-"  # the recorded "message id" of a hidden post, which has none


class Poster:
    def __init__(
        self,
        platform: ChatPlatform,
        conversation: ConversationRef,
        session_id: str,
        store: ConversationStore | None = None,
    ) -> None:
        self.platform = platform
        self.conversation = conversation
        self.session_id = session_id
        self._store = store
        self._frame_id = "-"  # posts outside any frame (none today) share this prefix
        self._index = 0

    def begin(self, frame_id: str) -> None:
        """The renderer starts rendering the frame `frame_id`: its posts are numbered anew."""
        self._frame_id = frame_id
        self._index = 0

    def next_key(self) -> str:
        key = f"{self._frame_id}/{self._index}"
        self._index += 1
        return key

    async def recorded(self, key: str) -> MessageRef | None:
        """The message posted under `key` (before a restart, too), if its id was recorded."""
        known = await self._store.recorded(self.session_id, key) if self._store else None
        return MessageRef(self.conversation, known) if known else None

    async def send(self, text: str, key: str | None = None) -> MessageRef:
        """Post `text` once under `key` (default: the frame's next key)."""
        key = key or self.next_key()
        ref, _ = await self._once(
            key, lambda: self.platform.send_keyed(self.conversation, text, key)
        )
        return ref

    async def send_hidden(self, title: str, text: str) -> None:
        """Post text the reader reveals (thinking) once. The platform may make it several
        messages and names none, so it is one key with no message id to find it by: an intent
        left by a death in between is posted again (rule 3 has nothing to ask)."""
        key = self.next_key()
        store = self._store
        if store is not None:
            if await store.recorded(self.session_id, key):
                return
            await store.record_intent(self.session_id, key)
        await self.platform.send_hidden(self.conversation, title, text)
        if store is not None:
            await store.record_post(self.session_id, key, HIDDEN)

    async def send_interaction(self, prompt: InteractionPrompt) -> tuple[MessageRef, bool]:
        """Post an interaction prompt once; True when it was posted now (not before a
        restart), so only then does anyone wait for its answer here."""
        key = self.next_key()
        return await self._once(
            key, lambda: self.platform.send_interaction_keyed(self.conversation, prompt, key)
        )

    async def upload(self, name: str, mime_type: str, data: bytes) -> MessageRef | None:
        """Upload a file once under the frame's next key (gateway.rendering.uploads). A platform
        that returns no message for it is recorded like a hidden post."""
        key = self.next_key()

        async def post() -> MessageRef:
            ref = await self.platform.upload_keyed(self.conversation, name, mime_type, data, key)
            return ref or MessageRef(self.conversation, HIDDEN)

        ref, _ = await self._once(key, post)
        return None if ref.message_id == HIDDEN else ref

    async def send_modes(self, text: str, row: ModeRow, key: str) -> tuple[MessageRef | None, bool]:
        """Post the mode buttons once under `key` (gateway.sessions.mode_buttons); a platform
        without buttons returns no message and is recorded like a hidden post, not asked again."""

        async def post() -> MessageRef:
            ref = await self.platform.show_modes(self.conversation, text, row, key)
            return ref or MessageRef(self.conversation, HIDDEN)

        ref, now = await self._once(key, post)
        return (None if ref.message_id == HIDDEN else ref), now

    async def _once(
        self, key: str, post: Callable[[], Awaitable[MessageRef]]
    ) -> tuple[MessageRef, bool]:
        store = self._store
        if store is not None:
            known = await store.recorded(self.session_id, key)
            if known:  # rule 2
                return MessageRef(self.conversation, known), False
            if known is None:
                await store.record_intent(self.session_id, key)  # rule 1
            else:  # rule 3: an intent whose outcome was never recorded
                found = await self.platform.find_keyed(self.conversation, key)
                if found is not None:
                    await store.record_post(self.session_id, key, found.message_id)
                    return found, False
        ref = await post()
        if store is not None:
            await store.record_post(self.session_id, key, ref.message_id)
        return ref, True
