"""The Discord bot: a discord.py client with the `/rawp` commands, thread messages as prompts.

`DiscordBot(settings, hooks)` builds everything; `await bot.start()` logs in and runs until
`await bot.close()`. Setup order matters: the endpoints (DISCORD_API_BASE_URL,
DISCORD_GATEWAY_URL) are applied before login; the prompt buttons are registered and the
command tree synced in `setup_hook`, before any event is dispatched, so clicks on prompts
posted before a restart are routed from the first moment.

Every message a human writes in a thread is a prompt for that thread's session (the
conversation layer knows which, `ConversationHooks.prompt`); attachments become prompt
attachments within `AttachmentLimits`. A message that mentions the bot at the top of a
channel, and every direct message, goes to `ConversationHooks.start_here` (issue 16 §1): a
session opens on that message — a thread on it, or the DM itself — with the message, mention
taken out, as its first prompt. A message is not an interaction, so nobody can be answered
privately in a channel: a user outside the allowed guilds/channels/roles is ignored in threads
and channels, told so in a DM (which only they see), and refused with an ephemeral note on
commands and buttons.

`run_in_background()` (tests, embedding) runs the client as a task of the bot's own
`TaskOwner`; `close()` closes the client, lets that task finish and closes the owner, so
nothing the bot started outlives it. A login failure ends `run_in_background` with its error.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import TYPE_CHECKING, Any

import discord
import discord.gateway
import discord.http
import yarl
from discord import app_commands

from adapters.call_labels import discord_label
from adapters.discord.access import REFUSAL, AccessPolicy, where_discord
from adapters.discord.auto_shards import AutoShards
from adapters.discord.commands import RawpCommands
from adapters.discord.model_command import model_command
from adapters.discord.platform import NAME, DiscordPlatform, conversation_of
from adapters.discord.settings import DiscordSettings
from adapters.discord.shards import ShardPlan
from gateway.metrics import GatewayMetrics
from gateway.platform import ConversationHooks, ConversationRef, Invocation, MessageRef
from gateway.sessions.prompt import PromptDraft, PromptError
from gateway.sessions.voice import Clip, Transcriber, add_transcript, is_audio, transcript_note
from rawp.events import PromptRequest
from runtime.tasks import TaskOwner, race

if TYPE_CHECKING:  # redis is imported only by a replica that shares shards (launch.py)
    from adapters.discord.shard_leases import ShardLeases

log = logging.getLogger(__name__)
CLOSE_WAIT_S = 10.0  # how long close() lets the client's task end before cancelling it


def apply_endpoints(settings: DiscordSettings) -> None:
    """Point discord.py at the configured REST base and gateway (process-wide class attributes
    in discord.py: one Discord per process; docs/testing-platforms.md)."""
    discord.http.Route.BASE = settings.api_base_url.rstrip("/")
    discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(settings.gateway_url)


def intents(settings: DiscordSettings) -> discord.Intents:
    chosen = discord.Intents.default()  # guilds, guild messages, reactions…
    chosen.message_content = True  # privileged: thread messages and mentions are prompts
    chosen.dm_messages = True  # in the defaults; named because direct messages are sessions
    # Privileged, and only asked for when needed: a role's members (approver roles).
    chosen.members = bool(settings.approver_roles)
    return chosen


def new_client(shards: ShardPlan, chosen: discord.Intents, options: dict[str, Any]):
    """One shard of one: a plain Client (one connection, as before sharding existed). Anything
    else: an AutoShardedClient running this replica's shards in one process (docs/discord.md).
    Render-only replicas get the same client; they never connect it."""
    if not shards.sharded:
        return discord.Client(intents=chosen, **options)
    ids = list(shards.ids) if shards.ids else None  # None: all (an empty list also means all)
    return discord.AutoShardedClient(
        intents=chosen, shard_count=shards.count, shard_ids=ids, **options
    )


class DiscordBot:
    def __init__(
        self,
        settings: DiscordSettings,
        hooks: ConversationHooks | None = None,
        metrics: GatewayMetrics | None = None,
        shard_leases: ShardLeases | None = None,
        transcriber: Transcriber | None = None,
        **client_options: Any,
    ) -> None:
        self.settings = settings
        self.transcriber = transcriber or Transcriber()  # voice messages in (issue 30 §6)
        self.shard_leases = shard_leases  # DISCORD_SHARD_IDS=auto (auto_shards.py)
        if metrics is not None:  # every REST call, 429s included (gateway.metrics)
            client_options["http_trace"] = metrics.platform_trace("discord", discord_label)
        self.shards = settings.shard_plan
        self.client = new_client(self.shards, intents(settings), client_options)
        self.tree = app_commands.CommandTree(self.client)
        policy = AccessPolicy(
            settings.allowed_guilds,
            settings.allowed_channels,
            settings.allowed_roles,
            settings.allow_dms,
        )
        self.platform = DiscordPlatform(
            self.client, hooks, policy, settings.approver_roles, settings.max_upload_bytes
        )
        commands = RawpCommands(self.platform)
        commands.add_command(model_command(commands))  # issue 30 §1, a module of its own
        self.tree.add_command(commands)
        self.ready = asyncio.Event()
        self.client.setup_hook = self._setup
        self.client.before_identify_hook = self._before_identify
        self._identify_concurrency = 1  # Discord's session_start_limit.max_concurrency
        self.client.event(self.on_ready)
        self.client.event(self.on_message)
        self._tasks = TaskOwner("discord bot", log)
        self._stopped = asyncio.Event()  # the background client ended (closed or failed)
        self._failure: BaseException | None = None
        self._closing = asyncio.Event()  # close() called: a render-only bot's start() returns

    @property
    def hooks(self) -> ConversationHooks:
        return self.platform.hooks

    async def _setup(self) -> None:
        """After login, before the gateway connects: REST works from here on."""
        self.platform.interactions.register(self.client)
        if self.shards.sharded:  # how many IDENTIFYs Discord takes per 5 s (large bots: 16+)
            *_, limit = await self.client.http.get_bot_gateway()
            self._identify_concurrency = max(1, int(limit.get("max_concurrency") or 1))
        self.platform.online.set()
        if self.shards.syncs_commands:  # one replica registers them, not each (shards.py)
            await self.tree.sync()

    async def _before_identify(self, shard_id: int | None, *, initial: bool = False) -> None:
        """Discord takes `max_concurrency` IDENTIFYs per 5 s, shard i in bucket
        i % max_concurrency; discord.py's own hook waits 5 s before every one but the first.
        Wait only where a new round of buckets starts."""
        if not initial and (shard_id or 0) % self._identify_concurrency == 0:
            await asyncio.sleep(5.0)

    def _use_plan(self, plan: ShardPlan) -> None:
        self.shards = plan

    async def on_ready(self) -> None:
        log.info("discord: logged in as %s", self.client.user)
        self.ready.set()

    # --- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        """Log in and run until closed (the token is never logged)."""
        apply_endpoints(self.settings)
        log.info("discord: %s", self.shards.describe())
        token = self.settings.bot_token.get_secret_value()
        if self.shards.auto:
            if self.shard_leases is None:
                raise RuntimeError("DISCORD_SHARD_IDS=auto needs RAWP_REDIS_URL (shard leases)")
            auto = AutoShards(
                self.client, self.shard_leases, self._use_plan, self.shards, self.platform.online
            )
            await auto.run(token, self._closing, self.ready)
            return
        if self.shards.connects:
            await self.client.start(token)
            return
        # Render-only (DISCORD_SHARD_IDS=none): login() is REST only (setup_hook runs in it);
        # no gateway connection, so no guild is known and no event arrives here.
        await self.client.login(token)
        self.ready.set()
        await self._closing.wait()

    async def serve(self) -> None:
        """Run until closed: what `rawp gateway` awaits."""
        await self.start()

    async def run_in_background(self, ready_timeout: float = 30.0) -> None:
        """Start, and return once the bot is ready (its guilds are known)."""
        await self._tasks.start()
        self._tasks.spawn(self._background(), name="discord client")
        async with asyncio.timeout(ready_timeout):
            await race(self.ready.wait(), self._stopped.wait())
        if not self.ready.is_set():
            failure = self._failure or RuntimeError("the Discord client stopped")
            raise RuntimeError(f"the Discord bot did not start: {failure}") from failure

    async def _background(self) -> None:
        try:
            await self.start()
        except Exception as exc:
            self._failure = exc  # logged by the owner; run_in_background names it
            raise
        finally:
            self._stopped.set()

    async def close(self) -> None:
        self.platform.online.clear()
        self._closing.set()
        await self.client.close()
        if self._tasks.running:
            # The client's task ends once the client is closed; one that does not is cancelled.
            try:
                async with asyncio.timeout(CLOSE_WAIT_S):
                    await self._stopped.wait()
            except TimeoutError:
                log.warning("discord: the client did not stop within %.0f s", CLOSE_WAIT_S)
        await self._tasks.close()

    # --- thread messages are prompts ------------------------------------------------------

    async def on_message(self, message: discord.Message) -> None:
        if message.author.bot:
            return
        direct = isinstance(message.channel, discord.DMChannel)
        starting = not isinstance(message.channel, discord.Thread)
        # The bot's own mention is addressing, not prompt: taken out wherever it is written.
        text = without_mention(message.content, self.client.user)
        if text is None:
            if starting and not direct:
                return  # in a channel, only a mention of the bot starts a session
            text = message.content
        where = where_discord(
            message.guild.id if message.guild else None, message.channel, message.author
        )
        if not self.platform.policy.allows(where):
            if direct:  # only they see a DM: the refusal can be said there
                await message.channel.send(REFUSAL)
            return
        conversation = conversation_of(message.channel)
        invocation = Invocation(
            str(message.author.id),
            conversation,
            MessageRef(conversation, str(message.id)),
            str(message.guild.id) if message.guild else None,
        )
        heard = None  # the transcript of any audio (gateway.sessions.voice)
        if starting and not text.strip() and not message.attachments:
            request = PromptRequest(prompt_text="")  # a bare mention: start, prompt nothing
        else:
            try:
                request, heard = await self._prompt_of(message, text)
            except PromptError as refused:
                await message.reply(f"⚠️ {refused}", mention_author=False)
                return
        hook = self.hooks.start_here if starting else self.hooks.prompt
        reply = await hook(invocation, request)
        if reply:
            await message.reply(reply, mention_author=False)
        elif heard is not None:  # the prompt went in: show what the agent got for the audio
            # A mention in a channel opened its session's thread on the message (same id).
            where = conversation if direct or not starting else thread_on(message)
            await self.platform.send_message(where, transcript_note(heard))

    async def _prompt_of(
        self, message: discord.Message, text: str | None = None
    ) -> tuple[PromptRequest, str | None]:
        """Typed text (escaped when built, §16.2.2), the transcript of any audio (a voice
        message), and the other attachments within their limits; with the transcript, if any."""
        draft = PromptDraft()
        typed = message.content if text is None else text
        draft.add_text(typed)
        audio = [a for a in message.attachments if is_audio(a.content_type)]
        heard = None
        if audio:  # transcribed, not attached
            clips = [Clip(a.filename, a.content_type or "", a.size, a.read) for a in audio]
            heard = await self.transcriber.transcribe_all(clips)
            add_transcript(draft, typed, heard)
        limits = draft.attachment_limits
        for attachment in message.attachments:
            if attachment in audio:
                continue
            if attachment.size > limits.max_bytes_each:  # refuse before downloading it
                raise PromptError(
                    f"{attachment.filename} is {attachment.size:,} bytes; an attachment may be "
                    f"at most {limits.max_bytes_each:,} bytes"
                )
            data = await attachment.read()
            mime = attachment.content_type or "application/octet-stream"
            draft.add_attachment(attachment.filename, mime, data)
        return draft.build(), heard


def thread_on(message: discord.Message) -> ConversationRef:
    """The thread opened on `message` in its channel: Discord gives it the message's id."""
    return ConversationRef(NAME, str(message.channel.id), str(message.id))


def without_mention(content: str, me: discord.abc.User | None) -> str | None:
    """`content` without the bot's mentions (`<@id>`, `<@!id>`), or None when it names the bot
    nowhere: a reply that only pings the bot, or a role mention, does not start a session."""
    if me is None:
        return None
    mention = re.compile(rf"[ \t]*<@!?{me.id}>[ \t]*")
    if not mention.search(content):
        return None
    return mention.sub(" ", content).strip()
