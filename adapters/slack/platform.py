"""`SlackPlatform`: the gateway's ChatPlatform over slack_sdk's AsyncWebClient.

No Slack payload leaves this package: a conversation is a channel and a thread (`thread_id` =
the thread's parent `ts`), a message reference holds the message `ts`.

- Each renderer message (≤ 40,000 characters) becomes one `chat.postMessage` in the thread,
  made of mrkdwn section blocks of ≤ 3,000 characters (adapters.slack.mrkdwn, A-35).
- Typing and the status line are `assistant.threads.setStatus` (it expires after 2 minutes;
  the heartbeat refreshes it every 48 s). Slack removes the status itself when the app posts
  in the thread ("removed if no message has been sent" within 2 minutes, the method's docs),
  so clearing a status that a post has already removed is not sent (issue 19 §6: it was one
  call of every turn). Where Slack refuses it (not an assistant thread, a missing scope, a
  deployment without the method) the conversation falls back to one status message that is
  edited as the status changes and deleted when it is cleared.
- Thinking (decision, docs/slack.md): Slack has no spoilers, so a hidden text is a one-line
  "💭 Thinking — Show" message; the button shows the text to whoever clicks it, ephemerally.
  The text is kept in memory: after a restart the button says it is gone.
- 429s: the client carries slack_sdk's `AsyncRateLimitErrorRetryHandler`, which sleeps
  Retry-After and sends the same request again; calls are awaited one by one, so nothing is
  lost, duplicated or reordered.
- Files the agent sends go up through Slack's external upload flow (`files_upload_v2`, scope
  `files:write`) into the thread. The flow carries no metadata, so `find_keyed` cannot find an
  upload: one whose record a crash lost may be uploaded again (gateway.rendering.posting rule 5).
  Its 429s are waited out like any call's (the same retry handler covers the upload URL).
- A keyed post (the renderer's post key, gateway.rendering.posting) carries the key in the message's
  metadata (`event_type` `rawp_post`); after a gateway died between posting and recording a
  post, `find_keyed` looks for it in the thread (`conversations.replies` with
  `include_all_metadata`) before it is posted again. A renderer message is one Slack message
  (≤ 40,000 characters is ≤ 14 blocks of 3,000, within one message's 50), so part 0 of a key
  stands for the whole post.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Awaitable, Callable

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack import mrkdwn, routes
from adapters.slack.choices import prompt_blocks, where_of
from adapters.slack.mode_buttons import ModeMessages
from adapters.slack.status import SlackStatus
from adapters.slack.views import compose_button
from gateway.approvals.prompt_board import PromptBoard
from gateway.platform import (
    ChatPlatform,
    ConversationHooks,
    ConversationRef,
    GuardedHooks,
    InteractionPrompt,
    MessageRef,
    PlatformLimits,
)

log = logging.getLogger(__name__)
NAME = "slack"
REVEAL_ACTION = "rawp_reveal"
# Slack: `text` may hold 40,000 characters, a section block 3,000 (A-35; docs/gateway.md); the
# assistant status lasts 2 minutes; one file may be up to 1 GB (files.getUploadURLExternal).
LIMITS = PlatformLimits(
    max_message_length=40_000,
    max_block_length=3_000,
    typing_expiry_s=120.0,
    max_buttons=25,
    max_upload_bytes=1_000_000_000,
)
GONE = {"message_not_found", "channel_not_found", "thread_not_found"}
REACTIONS = {
    "⏳": "hourglass_flowing_sand",
    "✅": "white_check_mark",
    "❌": "x",
    "⏹": "black_square_for_stop",
    "🕒": "clock3",  # queued behind a running turn (gateway.sessions.busy)
}


def web_client(
    token: str, base_url: str, max_retries: int = 5, session: aiohttp.ClientSession | None = None
) -> AsyncWebClient:
    """The Web API client: the configured base URL and 429s waited out (Retry-After); with
    `session`, every call goes through it (the gateway's metrics trace it)."""
    retry = AsyncRateLimitErrorRetryHandler(max_retry_count=max_retries)
    return AsyncWebClient(token=token, base_url=base_url, retry_handlers=[retry], session=session)


def _error(refused: SlackApiError) -> str:
    return str(refused.response.get("error", ""))


async def quietly(call, tolerated: frozenset[str] = frozenset(GONE)) -> None:
    """Await a Slack call; a message already gone (or `tolerated`) is not an error."""
    try:
        await call
    except SlackApiError as refused:
        if _error(refused) not in tolerated:
            raise


class SlackPlatform(ModeMessages, ChatPlatform):
    name = NAME
    limits = LIMITS
    user_ids_per_workspace = True  # a U… id is unique within its team only
    rate_routes = routes.ROUTES  # what the shared budget spends (adapters.slack.routes)

    def __init__(
        self,
        client: AsyncWebClient,
        hooks: ConversationHooks | None = None,
        approver_ids: Callable[[], Awaitable[frozenset[str]]] | None = None,
    ) -> None:
        self.client = client
        self._approver_ids = approver_ids  # members of SLACK_APPROVER_USERGROUPS (bot)
        self.hooks = GuardedHooks(hooks or ConversationHooks())
        self.prompt_board = PromptBoard()  # keyed by ((channel, thread ts), interaction id)
        self.hidden: dict[str, str] = {}  # reveal key → hidden text (this process only)
        # Typing and the status line (adapters.slack.status).
        self.status = SlackStatus(client, self.send_message, self.edit_message, self.delete_message)

    async def approvers(self, conversation: ConversationRef) -> frozenset[str]:
        return await self._approver_ids() if self._approver_ids is not None else frozenset()

    def use_hooks(self, hooks: ConversationHooks) -> None:
        """Plug in the conversation layer (its failures become apologies: GuardedHooks)."""
        self.hooks = GuardedHooks(hooks)

    # --- content ----------------------------------------------------------------------------

    async def _post(
        self,
        conversation: ConversationRef,
        text: str,
        blocks: list[dict],
        metadata: dict | None = None,
    ):
        extra = {"metadata": metadata} if metadata is not None else {}
        answer = await self.client.chat_postMessage(
            channel=conversation.channel_id,
            thread_ts=conversation.thread_id,
            text=text,
            blocks=blocks,
            unfurl_links=False,
            **extra,
        )
        self.status.posted(conversation)  # Slack took the assistant status down
        return MessageRef(conversation, answer["ts"])

    async def send_message(self, conversation: ConversationRef, text: str) -> MessageRef:
        return await self._send(conversation, text, None)

    async def send_keyed(self, conversation: ConversationRef, text: str, key: str) -> MessageRef:
        return await self._send(conversation, text, key)

    async def _send(self, conversation: ConversationRef, text: str, key: str | None):
        first: MessageRef | None = None
        for part, blocks in enumerate(mrkdwn.messages_of(text)):
            fallback = blocks[0]["text"]["text"] if blocks else mrkdwn.escape(text[:3000])
            metadata = post_metadata(key, part) if key is not None else None
            ref = await self._post(conversation, fallback, blocks, metadata)
            first = first or ref
        assert first is not None
        return first

    async def find_keyed(self, conversation: ConversationRef, key: str) -> MessageRef | None:
        if conversation.thread_id is None:
            return None  # renderer output lives in threads; a channel is not searched
        wanted = post_metadata(key, 0)
        cursor: str | None = None
        while True:
            page = await self.client.conversations_replies(
                channel=conversation.channel_id,
                ts=conversation.thread_id,
                include_all_metadata=True,
                limit=200,
                **({"cursor": cursor} if cursor else {}),
            )
            for message in page.get("messages") or []:
                if message.get("metadata") == wanted:
                    return MessageRef(conversation, message["ts"])
            cursor = (page.get("response_metadata") or {}).get("next_cursor")
            if not page.get("has_more") or not cursor:
                return None

    async def show_prompt(self, conversation: ConversationRef, user_id: str, text: str):
        """The user's prompt as the thread shows it (sent from a modal, so not their message)."""
        shown = f"<@{user_id}>: {mrkdwn.to_mrkdwn(text)}"[:3000]
        return await self._post(conversation, shown, [mrkdwn.section(shown)])

    async def upload_file(
        self, conversation: ConversationRef, name: str, mime_type: str, data: bytes
    ) -> MessageRef:
        """Slack's external upload flow (files_upload_v2): files.getUploadURLExternal, the
        bytes POSTed to the upload URL it returns, files.completeUploadExternal sharing the file
        into the thread. Slack shares asynchronously: the reference holds the message `ts` when
        the answer names it, else the file id (an upload is never edited)."""
        answer = await self.client.files_upload_v2(
            content=data,
            filename=name,
            title=name,
            channel=conversation.channel_id,
            thread_ts=conversation.thread_id,
        )
        file = answer.get("file") or {}
        return MessageRef(conversation, shared_ts(file, conversation.channel_id) or file["id"])

    async def edit_message(self, message: MessageRef, text: str) -> None:
        blocks = mrkdwn.messages_of(text)[0]  # edited texts are short (task lists, status)
        fallback = blocks[0]["text"]["text"] if blocks else mrkdwn.escape(text[:3000])
        await quietly(
            self.client.chat_update(
                channel=message.conversation.channel_id,
                ts=message.message_id,
                text=fallback,
                blocks=blocks,
            )
        )

    async def delete_message(self, message: MessageRef) -> None:
        await quietly(
            self.client.chat_delete(channel=message.conversation.channel_id, ts=message.message_id)
        )

    async def send_hidden(self, conversation: ConversationRef, title: str, text: str) -> None:
        key = secrets.token_urlsafe(12)
        self.hidden[key] = text
        button = {
            "type": "button",
            "action_id": REVEAL_ACTION,
            "value": key,
            "text": {"type": "plain_text", "text": "Show"},
        }
        blocks = [
            {
                "type": "section",
                "text": {"type": "mrkdwn", "text": f"{mrkdwn.escape(title)} _(hidden)_"},
                "accessory": button,
            }
        ]
        await self._post(conversation, f"{mrkdwn.escape(title)} (hidden)", blocks)

    async def reveal(self, conversation: ConversationRef, user_id: str, key: str) -> None:
        """Show a hidden text to one user (the click on "Show")."""
        text = self.hidden.get(key)
        if text is None:
            await self.send_ephemeral(conversation, user_id, "That text is no longer available.")
            return
        for blocks in mrkdwn.messages_of(text):
            await self.client.chat_postEphemeral(
                channel=conversation.channel_id,
                thread_ts=conversation.thread_id,
                user=user_id,
                text=blocks[0]["text"]["text"] if blocks else "…",
                blocks=blocks,
            )

    async def send_ephemeral(self, conversation: ConversationRef, user_id: str, text: str) -> None:
        await self.client.chat_postEphemeral(
            channel=conversation.channel_id,
            thread_ts=conversation.thread_id,
            user=user_id,
            text=mrkdwn.to_mrkdwn(text)[:3000],
        )

    # --- decorations ------------------------------------------------------------------------

    async def add_reaction(self, message: MessageRef, emoji: str) -> None:
        await quietly(
            self.client.reactions_add(
                channel=message.conversation.channel_id,
                timestamp=message.message_id,
                name=REACTIONS.get(emoji, emoji.strip(":")),
            ),
            frozenset(GONE | {"already_reacted"}),
        )

    async def remove_reaction(self, message: MessageRef, emoji: str) -> None:
        await quietly(
            self.client.reactions_remove(
                channel=message.conversation.channel_id,
                timestamp=message.message_id,
                name=REACTIONS.get(emoji, emoji.strip(":")),
            ),
            frozenset(GONE | {"no_reaction"}),
        )

    async def trigger_typing(self, conversation: ConversationRef) -> None:
        await self.status.typing(conversation)

    async def set_status(self, conversation: ConversationRef, text: str | None) -> None:
        await self.status.set(conversation, text)

    # --- conversations ----------------------------------------------------------------------

    async def open_thread(self, conversation: ConversationRef, title: str) -> ConversationRef:
        """A thread is a reply chain under a parent message: post the parent, return its ts."""
        if conversation.thread_id is not None:
            return conversation
        # The parent carries the composer button; a click names the thread by its message ts.
        blocks = [mrkdwn.section(f"🧵 {mrkdwn.escape(title)}"[:3000]), compose_button(conversation)]
        parent = await self._post(conversation, f"🧵 {mrkdwn.escape(title)}"[:3000], blocks)
        return ConversationRef(NAME, conversation.channel_id, parent.message_id)

    async def open_thread_on(self, message: MessageRef, title: str) -> ConversationRef:
        """The thread under the user's own message (a mention, a DM): its ts is the thread."""
        if message.conversation.thread_id is not None:
            return message.conversation
        return ConversationRef(NAME, message.conversation.channel_id, message.message_id)

    # --- interactions -----------------------------------------------------------------------

    async def send_interaction(
        self, conversation: ConversationRef, prompt: InteractionPrompt
    ) -> MessageRef:
        return await self._interaction(conversation, prompt, None)

    async def send_interaction_keyed(
        self, conversation: ConversationRef, prompt: InteractionPrompt, key: str
    ) -> MessageRef:
        return await self._interaction(conversation, prompt, post_metadata(key, 0))

    async def _interaction(
        self, conversation: ConversationRef, prompt: InteractionPrompt, metadata: dict | None
    ) -> MessageRef:
        text = f"❓ {mrkdwn.escape(prompt.prompt)}"[:3000]
        blocks = prompt_blocks(conversation, prompt)
        ref = await self._post(conversation, text, blocks, metadata)
        self.prompt_board.open(where_of(conversation), prompt, ref, text)
        return ref

    async def close_interaction(self, message: MessageRef, outcome: str) -> None:
        closed = self.prompt_board.close(message)
        text = f"{closed.text}\n{mrkdwn.to_mrkdwn(outcome)}" if closed else outcome
        await quietly(
            self.client.chat_update(
                channel=message.conversation.channel_id,
                ts=message.message_id,
                text=text[:3000],
                blocks=[mrkdwn.section(text[:3000])],
            )
        )


POST_EVENT = "rawp_post"  # the metadata event type of a keyed post


def shared_ts(file: dict, channel_id: str) -> str | None:
    """The `ts` of the message that shares `file` in `channel_id`, if Slack said it yet."""
    shares = file.get("shares") or {}
    for where in ("public", "private"):
        for share in (shares.get(where) or {}).get(channel_id) or []:
            if share.get("ts"):
                return str(share["ts"])
    return None


def post_metadata(key: str, part: int) -> dict:
    """Slack message metadata naming a post key (and which message of the post it is)."""
    return {"event_type": POST_EVENT, "event_payload": {"key": key, "part": part}}
