"""`DiscordPlatform`: the gateway's ChatPlatform over a real discord.py client.

No discord type leaves this package: conversations and messages are `ConversationRef` /
`MessageRef` holding Discord ids as strings. A conversation is a thread (`thread_id`) under a
text channel (`channel_id`), or the channel itself.

- Messages arrive already within 2,000 code points (the renderer chunks them, A-35).
- Typing is one trigger per call (`await channel.typing()`); the core's heartbeat repeats it
  every 4 s, inside Discord's 10 s expiry (G-NS-10).
- Thinking goes out as spoilers with `||` inside neutralised (gateway.rendering.chunker, G-NS-16).
- There is no status line on Discord (`set_status` is a no-op; the renderer's interim message
  covers long turns, G-NS-12).
- Ephemeral notes answer the user's latest button click in that thread (only an interaction can
  be answered ephemerally); without one the note is posted with a mention of the user.
- REST 429s are waited out by discord.py itself (it sleeps `retry_after` and retries the same
  request), so nothing is lost, duplicated or reordered.
- Files the agent sends are message attachments (a multipart POST, `discord.File`), at most
  `limits.max_upload_bytes` (10 MiB, Discord's limit for a server without boosts; set
  DISCORD_MAX_UPLOAD_BYTES for a boosted one). An upload is keyed like a message (below).
- A keyed post (the renderer's post key, gateway.rendering.posting) carries a `nonce` derived from
  the key; discord.py sends it with `enforce_nonce: true`, so Discord answers a repeat within
  minutes with the message already made instead of a second one (a gateway killed between posting
  and recording a message posts it again after its restart).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import io
import logging
from dataclasses import replace

import discord

from adapters.discord import custom_ids, routes
from adapters.discord.access import AccessPolicy
from adapters.discord.choices import prompt_view
from adapters.discord.interactions import DiscordInteractions
from adapters.discord.mode_buttons import mode_view
from gateway.approvals.prompt_board import PromptBoard
from gateway.platform import (
    ChatPlatform,
    Choice,
    ConversationHooks,
    ConversationRef,
    GuardedHooks,
    InteractionPrompt,
    MessageRef,
    ModeRow,
    PlatformLimits,
)
from gateway.rendering.chunker import spoiler_messages

log = logging.getLogger(__name__)
NAME = "discord"
NO_MENTIONS = discord.AllowedMentions.none()
# Discord counts 2,000 code points per message; typing lasts 10 s; a bot in a server without
# boosts uploads at most 10 MiB per file (more in boosted ones: DISCORD_MAX_UPLOAD_BYTES).
LIMITS = PlatformLimits(
    max_message_length=2000,
    typing_expiry_s=10.0,
    max_buttons=25,
    max_upload_bytes=10 * 1024 * 1024,
)


def conversation_of(channel: discord.abc.Messageable | discord.abc.Snowflake) -> ConversationRef:
    """A channel or thread as a ConversationRef."""
    if isinstance(channel, discord.Thread):
        return ConversationRef(NAME, str(channel.parent_id), str(channel.id))
    return ConversationRef(NAME, str(channel.id))


def target_id(conversation: ConversationRef) -> int:
    return int(conversation.thread_id or conversation.channel_id)


def messageable_of(
    client: discord.Client, conversation: ConversationRef
) -> discord.PartialMessageable:
    """Where a conversation's messages go: the thread, else the channel."""
    return client.get_partial_messageable(target_id(conversation))


def message_of(client: discord.Client, message: MessageRef) -> discord.PartialMessage:
    conversation = message.conversation
    if conversation.thread_id == message.message_id:
        # A thread opened on a message (a mention) has that message's id, and the message
        # itself lives in the parent channel: its ✅ after a restart must go there.
        parent = ConversationRef(NAME, conversation.channel_id)
        return messageable_of(client, parent).get_partial_message(int(message.message_id))
    return messageable_of(client, conversation).get_partial_message(int(message.message_id))


def approver_ids(
    client: discord.Client, approver_roles: frozenset[str], conversation: ConversationRef
) -> frozenset[str]:
    """Members of the approver roles in the conversation's guild, for
    `RenderOptions.approver_ids` (they may answer any approval). Needs the Server Members
    intent, which the bot asks for when DISCORD_APPROVER_ROLES is set."""
    channel = client.get_channel(int(conversation.channel_id))
    guild = getattr(channel, "guild", None)
    if guild is None or not approver_roles:
        return frozenset()
    return frozenset(
        str(member.id)
        for role_id in approver_roles
        if (role := guild.get_role(int(role_id))) is not None
        for member in role.members
    )


class DiscordPlatform(ChatPlatform):
    name = NAME
    limits = LIMITS
    user_ids_per_workspace = False  # Discord user ids are global snowflakes
    rate_routes = routes.ROUTES  # what the shared budget spends (adapters.discord.routes)

    def __init__(
        self,
        client: discord.Client,
        hooks: ConversationHooks | None = None,
        policy: AccessPolicy | None = None,
        approver_roles: frozenset[str] = frozenset(),
        max_upload_bytes: int | None = None,
    ) -> None:
        self.client = client
        if max_upload_bytes is not None:  # a boosted server takes more (DISCORD_MAX_UPLOAD_BYTES)
            self.limits = replace(self.limits, max_upload_bytes=max_upload_bytes)
        self.hooks = GuardedHooks(hooks or ConversationHooks())
        self.policy = policy or AccessPolicy()
        self.approver_roles = approver_roles
        # Set once the client has logged in (its REST session exists): a conversation layer
        # resuming sessions may render before the bot finished starting; that output waits.
        self.online = asyncio.Event()
        self.prompt_board = PromptBoard()  # keyed by (thread id, interaction id)
        # Presses, modal answers and access refusals (adapters.discord.interactions).
        self.interactions = DiscordInteractions(
            self.prompt_board, self.policy, lambda: self.hooks, conversation_of
        )

    def use_hooks(self, hooks: ConversationHooks) -> None:
        """Plug in the conversation layer (its failures become apologies: GuardedHooks)."""
        self.hooks = GuardedHooks(hooks)

    # --- content ----------------------------------------------------------------------------

    async def send_message(self, conversation: ConversationRef, text: str) -> MessageRef:
        await self.online.wait()
        channel = messageable_of(self.client, conversation)
        sent = await channel.send(text, allowed_mentions=NO_MENTIONS)
        return MessageRef(conversation, str(sent.id))

    async def send_keyed(self, conversation: ConversationRef, text: str, key: str) -> MessageRef:
        await self.online.wait()
        sent = await messageable_of(self.client, conversation).send(
            text, allowed_mentions=NO_MENTIONS, nonce=nonce_of(conversation, key)
        )
        return MessageRef(conversation, str(sent.id))

    async def upload_file(
        self, conversation: ConversationRef, name: str, mime_type: str, data: bytes
    ) -> MessageRef:
        return await self._upload(conversation, name, data, None)

    async def upload_keyed(
        self, conversation: ConversationRef, name: str, mime_type: str, data: bytes, key: str
    ) -> MessageRef:
        return await self._upload(conversation, name, data, nonce_of(conversation, key))

    async def _upload(
        self, conversation: ConversationRef, name: str, data: bytes, nonce: str | None
    ) -> MessageRef:
        """One message with the file attached (multipart `files[0]`); Discord takes the type
        from the name, so `mime_type` is not sent."""
        await self.online.wait()
        extra = {"nonce": nonce} if nonce is not None else {}
        sent = await messageable_of(self.client, conversation).send(
            file=discord.File(io.BytesIO(data), filename=name),
            allowed_mentions=NO_MENTIONS,
            **extra,
        )
        return MessageRef(conversation, str(sent.id))

    async def edit_message(self, message: MessageRef, text: str) -> None:
        await self.online.wait()
        with contextlib.suppress(discord.NotFound):
            await message_of(self.client, message).edit(content=text, allowed_mentions=NO_MENTIONS)

    async def delete_message(self, message: MessageRef) -> None:
        await self.online.wait()
        with contextlib.suppress(discord.NotFound):
            await message_of(self.client, message).delete()

    async def send_hidden(self, conversation: ConversationRef, title: str, text: str) -> None:
        for piece in spoiler_messages(title, text, self.limits.max_message_length):
            await self.send_message(conversation, piece)

    async def send_ephemeral(self, conversation: ConversationRef, user_id: str, text: str) -> None:
        await self.online.wait()
        click = self.interactions.clicks.get((str(target_id(conversation)), user_id))
        if click is not None and not click.is_expired():
            with contextlib.suppress(discord.NotFound):
                await click.followup.send(text, ephemeral=True, allowed_mentions=NO_MENTIONS)
                return
        only_them = discord.AllowedMentions(
            everyone=False, roles=False, users=[discord.Object(int(user_id))]
        )
        await messageable_of(self.client, conversation).send(
            f"<@{user_id}> {text}", allowed_mentions=only_them
        )

    # --- decorations ------------------------------------------------------------------------

    async def add_reaction(self, message: MessageRef, emoji: str) -> None:
        await self.online.wait()
        with contextlib.suppress(discord.NotFound):
            await message_of(self.client, message).add_reaction(emoji)

    async def remove_reaction(self, message: MessageRef, emoji: str) -> None:
        await self.online.wait()
        me = self.client.user
        if me is not None:
            with contextlib.suppress(discord.NotFound):
                await message_of(self.client, message).remove_reaction(emoji, me)

    async def trigger_typing(self, conversation: ConversationRef) -> None:
        await self.online.wait()
        await messageable_of(
            self.client, conversation
        ).typing()  # one trigger; the heartbeat repeats it

    async def set_status(self, conversation: ConversationRef, text: str | None) -> None:
        return None  # Discord has no status line; the interim message stands in (G-NS-12)

    async def approvers(self, conversation: ConversationRef) -> frozenset[str]:
        return approver_ids(self.client, self.approver_roles, conversation)

    # --- conversations ----------------------------------------------------------------------

    async def open_thread(self, conversation: ConversationRef, title: str) -> ConversationRef:
        await self.online.wait()
        if conversation.thread_id is not None:
            return conversation  # already in a thread: the session lives there
        channel = self.client.get_channel(int(conversation.channel_id))
        if not isinstance(channel, discord.TextChannel):
            channel = await self.client.fetch_channel(int(conversation.channel_id))
        thread = await channel.create_thread(
            name=title[:100] or "session", type=discord.ChannelType.public_thread
        )
        return ConversationRef(NAME, str(channel.id), str(thread.id))

    async def open_thread_on(self, message: MessageRef, title: str) -> ConversationRef:
        """A thread on the user's message (a mention); a DM, which has none, stays the DM."""
        await self.online.wait()
        conversation = message.conversation
        if conversation.thread_id is not None:
            return conversation
        channel = self.client.get_channel(int(conversation.channel_id))
        if channel is None:  # DM channels are not cached by discord.py; guild channels are
            channel = await self.client.fetch_channel(int(conversation.channel_id))
        if isinstance(channel, discord.abc.PrivateChannel):
            return conversation
        thread = await channel.get_partial_message(int(message.message_id)).create_thread(
            name=title[:100] or "session"
        )
        return ConversationRef(NAME, str(channel.id), str(thread.id))

    # --- interactions -----------------------------------------------------------------------

    async def send_interaction(
        self, conversation: ConversationRef, prompt: InteractionPrompt
    ) -> MessageRef:
        return await self._interaction(conversation, prompt, None)

    async def send_interaction_keyed(
        self, conversation: ConversationRef, prompt: InteractionPrompt, key: str
    ) -> MessageRef:
        return await self._interaction(conversation, prompt, nonce_of(conversation, key))

    async def _interaction(
        self, conversation: ConversationRef, prompt: InteractionPrompt, nonce: str | None
    ) -> MessageRef:
        await self.online.wait()
        key = str(target_id(conversation))
        text = f"❓ {prompt.prompt}"[: self.limits.max_message_length]
        view = prompt_view(self.interactions.button_class, key, prompt)
        extra = {"nonce": nonce} if nonce is not None else {}
        sent = await messageable_of(self.client, conversation).send(
            text, view=view, allowed_mentions=NO_MENTIONS, **extra
        )
        ref = MessageRef(conversation, str(sent.id))
        self.interactions.digests[custom_ids.digest(prompt.interaction_id)] = prompt.interaction_id
        self.prompt_board.open(key, prompt, ref, text)
        return ref

    async def show_modes(
        self,
        conversation: ConversationRef,
        text: str,
        row: ModeRow,
        key: str,
        message: MessageRef | None = None,
    ) -> MessageRef:
        await self.online.wait()
        view = mode_view(self.interactions.mode_button_class, row)
        if message is not None:
            with contextlib.suppress(discord.NotFound):
                await message_of(self.client, message).edit(
                    content=text, view=view, allowed_mentions=NO_MENTIONS
                )
            return message
        sent = await messageable_of(self.client, conversation).send(
            text, view=view, allowed_mentions=NO_MENTIONS, nonce=nonce_of(conversation, key)
        )
        return MessageRef(conversation, str(sent.id))

    def where_of(self, conversation: ConversationRef) -> str:
        return str(target_id(conversation))  # prompts are keyed by thread id here

    def deliver_choice(self, conversation, interaction_id: str, choice: Choice) -> bool:
        encoded = self.interactions.interaction_id(interaction_id)
        return super().deliver_choice(conversation, encoded, choice)

    async def close_interaction(self, message: MessageRef, outcome: str) -> None:
        await self.online.wait()
        closed = self.prompt_board.close(message)
        text = f"{closed.text}\n{outcome}" if closed else outcome
        with contextlib.suppress(discord.NotFound):
            await message_of(self.client, message).edit(
                content=text[: self.limits.max_message_length], view=None
            )


def nonce_of(conversation: ConversationRef, key: str) -> str:
    """A post key as a Discord nonce: the same for the same post, at most 25 characters."""
    where = f"{target_id(conversation)}\x1f{key}".encode()
    return hashlib.sha256(where).hexdigest()[:25]
