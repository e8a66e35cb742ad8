"""The conversation layer: chat verbs → Edge API calls, threads ↔ sessions (issue 10).

`ConversationService` is the `ConversationHooks` every adapter calls. This module holds its
session life cycle (starting, going live, resuming, finding a conversation's session); the chat
commands that act on a session once found are `ChatCommands` (gateway.sessions.chat_commands).
Rules:

1. Who is asking: each chat user is their own master user, the subject
   `platform:user` (`discord:123`, `console:local`), Slack `slack:team:user` because Slack
   user ids are per workspace. The gateway trades its edge secret for that user's token
   (gateway.edge_client), so a user only ever sees and drives their own nodes and sessions.
2. Start: the node is named by id, device name (any case) or a unique prefix of either; the
   session is created on the master (`POST /v1/edge/nodes/{id}/sessions`), a thread is opened
   under the invoking conversation, the thread ↔ session binding is stored (SQLite,
   gateway.storage.conversation_store) and the session goes live: its WebSocket is opened with the
   ticket the master returned and its frames are rendered into the thread. A message in the
   new thread that arrives before its binding is stored (the thread is visible the moment it
   is opened) waits for the start to finish rather than hearing "no session". A mention or a
   direct message starts a session on that message (`start_here`, gateway.sessions.starting).
3. Every message in a bound conversation is a prompt for its session — from the session's owner
   only: anyone else is told so and nothing is sent (the agent runs on the owner's machine).
4. Restart: bindings survive in SQLite. `resume()` reconnects every open one with a fresh
   ticket (A-22) and the session's durable cursor as `last_message_id`, so the master replays
   what followed the last frame rendered before the gateway stopped or died; the renderer
   posts only what is missing (gateway.rendering.posting, issue 14 §4). A conversation whose session
   has ended meanwhile is marked ended. A prompt in a conversation not yet live reconnects it first.
5. A session that ends elsewhere (terminated by another edge, its node gone) ends its
   conversation: the binding is marked ended and the thread is told.
6. Stop sends `control.prompt.cancel` for the running turn; end deletes the session on the
   master, closes the link and marks the binding ended. A slash command typed in the channel
   instead of the thread acts on the user's newest open session under that channel. A prompt
   sent during a turn waits, marked 🕒, or stops that turn first: the channel's busy mode
   (gateway.sessions.busy). The mode command changes the agent's mode
   (gateway.sessions.mode_command), the model command its model (gateway.sessions.model_command);
   a revived session gets the stored mode and model again. The worktree
   command diffs, merges or discards a session's git worktree (gateway.sessions.worktree_command).
   The resume command continues an ended session's conversation in its thread
   (gateway.sessions.resume_command); the fork command continues a copy of a session's
   conversation in a new thread (gateway.sessions.fork_command).
7. Every answer is text for the user; a refusal from the master is shown with its error code,
   never a stack trace.
8. Every live session's pump is a task of this service's `TaskOwner` (started with the first
   session, closed by `close()`): nothing outlives the service, and a pump's failure is logged
   once with its traceback.
9. A session's approval outcomes go to the master's audit log as its owner
   (gateway.approvals.audit), an answer to a prompt from before a restart (rule 4) included.
10. Replicas (gateway.replicas.cluster): only the holder of a session's lease makes it live
   (`_revive` claims it or raises `HeldElsewhere`; a start claims it before binding); its
   renderer is fenced; a lost lease ends nothing. `resume` is then the sweeper's
   (gateway.replicas.cluster_routing).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from gateway.approvals.audit import EdgeAuditSink
from gateway.edge_client import EdgeApiError, EdgeClient
from gateway.edge_link import SessionLink
from gateway.platform import (
    ChatPlatform,
    ConversationHooks,
    ConversationRef,
    Invocation,
)
from gateway.rendering.render import RenderOptions, SessionRenderer
from gateway.rendering.render_core import CHAT_MODES
from gateway.replicas.cluster import FencedPlatform, HeldElsewhere, LocalCluster
from gateway.sessions import (
    fork_command,
    mode_command,
    model_command,
    resume_command,
    worktree_command,
)
from gateway.sessions.chat_commands import (
    NO_SESSION,
    NOT_YOURS,
    SESSION_ENDED,
    ChatCommands,
    refusal,
)
from gateway.sessions.live import ConnectedSession
from gateway.sessions.model_command import ModelCommands
from gateway.storage.conversation_store import Binding, ConversationStore
from gateway.storage.web_logins import WebLinks
from rawp.events import PromptRequest
from rawp.rest import NodeInfo
from runtime.tasks import TaskOwner

log = logging.getLogger(__name__)

START_WAIT_S = 30.0  # how long a message in a thread being opened waits for its binding


class StartRefused(Exception):
    """A session could not be started; `text` tells the user why (`code`: the master's)."""

    def __init__(self, text: str, code: str | None = None) -> None:
        super().__init__(text)
        self.text = text
        self.code = code


def _greeting(agent: str, device: str, session_id: str, worktree: bool) -> str:
    greeting = f"▶️ {agent} on {device} — session `{session_id}`."
    if worktree:  # issue 30 §3: say where the agent works and how it ends
        greeting += " It works in its own git worktree; end it with the worktree command."
    return greeting


def _channel_key(conversation: ConversationRef) -> tuple[str, str]:
    return (conversation.platform, conversation.channel_id)


def subject_of(invocation: Invocation, per_workspace: bool = False) -> str:
    """The master user a chat user is (rule 1); `per_workspace`: the platform's user ids are
    unique within a workspace only (`ChatPlatform.user_ids_per_workspace`, Slack)."""
    platform = invocation.conversation.platform
    if per_workspace and invocation.workspace_id:
        return f"{platform}:{invocation.workspace_id}:{invocation.user_id}"
    return f"{platform}:{invocation.user_id}"


@dataclass(frozen=True)
class ConversationSettings:
    agents: Sequence[str] = ("demo",)  # offered by autocomplete; any name may be typed
    workspace_path: str | None = None  # None: the node's default workspace
    render: RenderOptions = field(default_factory=RenderOptions)
    schedule_poll_s: float = 15.0  # gateway.sessions.schedule_command


class ConversationService(ChatCommands, ModelCommands, ConversationHooks):
    """The conversation layer; its chat commands are in `ChatCommands`
    (gateway.sessions.chat_commands)."""

    def __init__(
        self,
        edge: EdgeClient,
        store: ConversationStore,
        settings: ConversationSettings | None = None,
        platform: ChatPlatform | None = None,
    ) -> None:
        self.edge = edge
        self.store = store
        self.settings = settings or ConversationSettings()
        self.platform = platform
        self.live: dict[str, ConnectedSession] = {}  # session_id → live session
        self._fingerprints: dict = {}  # session_id → its `.env` fingerprints (render rule 9)
        self._reviving: dict[str, asyncio.Lock] = {}
        self.web_links: WebLinks | None = None  # issue 21: rawp_app.launch, with the web edge
        # (platform, channel) → starts in progress there: a thread being opened (rule 2)
        self._starting: dict[tuple[str, str], int] = {}
        self._started: asyncio.Condition | None = None
        self._tasks = TaskOwner("conversations", log)  # rule 8
        # gateway.sessions.starting: mentions and direct messages, made on first use.
        self._starter = None
        self.cluster = LocalCluster()  # rule 10: replaced by a RedisCluster (rawp_app.launch)

    def bind_platform(self, platform: ChatPlatform) -> None:
        """Adapters build their platform around the hooks; it is handed back here."""
        self.platform = platform

    # --- life cycle --------------------------------------------------------------------------

    async def resume(self) -> int:
        """Reconnect every open conversation (rule 4); how many went live."""
        revived = 0
        if self.cluster.clustered:  # rule 10
            return revived
        for binding in await self.store.open_bindings():
            if binding.conversation.platform != self._platform.name:
                continue
            try:
                await self._revive(binding)
                revived += 1
            except EdgeApiError as exc:
                log.info("conversation of session %s not resumed: %s", binding.session_id, exc)
        return revived

    async def close(self) -> None:
        """Let go of every live session (they keep running on the master)."""
        for live in list(self.live.values()):
            await live.close()
        self.live.clear()
        await self._tasks.close()

    def subject_of(self, invocation: Invocation) -> str:
        """The master user a chat user is, as the bound platform scopes its user ids (rule 1)."""
        per_workspace = self.platform is not None and self.platform.user_ids_per_workspace
        return subject_of(invocation, per_workspace)

    @property
    def _platform(self) -> ChatPlatform:
        if self.platform is None:
            raise RuntimeError("no chat platform is bound to the conversation service")
        return self.platform

    # --- starting ----------------------------------------------------------------------------

    async def start_session(
        self, invocation: Invocation, node: str, agent: str, worktree: bool = False
    ) -> str | None:
        try:
            _, greeting = await self.open_session(invocation, node, agent, worktree=worktree)
        except StartRefused as refused:
            return refused.text
        return greeting

    async def open_session(
        self,
        invocation: Invocation,
        node: str,
        agent: str,
        *,
        on_message: bool = False,
        worktree: bool = False,
        fork_of: str | None = None,
        resume_conversation: str | None = None,
    ) -> tuple[ConnectedSession, str]:
        """Rule 2: the live session and its greeting, or `StartRefused` saying why not."""
        subject = self.subject_of(invocation)
        try:
            chosen = await self._resolve_node(subject, node)
            if isinstance(chosen, str):
                raise StartRefused(chosen)
            created = await self.edge.create_session(
                subject, chosen.node_id, agent, self.settings.workspace_path, worktree, fork_of,
                resume_conversation=resume_conversation,
            )  # fmt: skip
        except EdgeApiError as exc:
            raise StartRefused(refusal(exc), exc.error_code) from None
        device = chosen.device_name or chosen.node_id
        session_id = created.session_id
        where = _channel_key(invocation.conversation)
        self._starting[where] = self._starting.get(where, 0) + 1
        try:
            title = f"{agent} on {device}"[:100]
            if on_message and invocation.message is not None:  # gateway.sessions.starting
                thread = await self._platform.open_thread_on(invocation.message, title)
            else:
                thread = await self._platform.open_thread(invocation.conversation, title)
            await self._replace_previous(thread, subject)
            await self.cluster.claim(session_id)  # rule 10: a fresh id, nobody else holds it
            binding = await self.store.bind(
                thread,
                subject=subject,
                session_id=session_id,
                node_id=chosen.node_id,
                agent_name=agent,
            )
            # A prompt that found the binding already stored revives too: one of us makes the
            # session live, the other finds it (never two renderers on it).
            live = await self.go_live_once(binding, ticket=created.edge_ws_ticket)
            await self.store.remember_start(subject, chosen.node_id, agent)
        finally:
            if session_id not in self.live:  # rule 10: a start that failed holds nothing
                await self.cluster.release(session_id)
            self._starting[where] -= 1
            if not self._starting[where]:
                del self._starting[where]
            async with self._condition():
                self._condition().notify_all()
        greeting = _greeting(agent, device, session_id, worktree)
        if thread != invocation.conversation:
            await self._platform.send_message(
                thread, greeting + " Every message in this thread is a prompt."
            )
        return live, greeting

    async def _replace_previous(self, thread: ConversationRef, subject: str) -> None:
        """Started inside a thread that already has a session (the console, a command typed
        in a thread): the old session ends, so one thread never renders two sessions."""
        previous = await self.store.get(thread)
        if previous is None or previous.ended:
            return
        live = self.live.pop(previous.session_id, None)
        if live is not None:
            await live.close()
        if previous.subject == subject:
            try:
                await self.edge.end_session(subject, previous.session_id)
            except EdgeApiError as exc:
                log.info("previous session %s not ended: %s", previous.session_id, exc)
        await self.store.mark_ended(previous.session_id)

    async def _resolve_node(self, subject: str, wanted: str) -> NodeInfo | str:
        nodes = await self.edge.list_nodes(subject)
        if not nodes:
            return "You have no machines yet. Pair one with the pair command."
        text = wanted.strip().casefold()
        for exact in (
            [n for n in nodes if n.node_id.casefold() == text],
            [n for n in nodes if n.device_name.casefold() == text],
        ):
            if len(exact) == 1:
                return exact[0]
        prefixed = [
            n
            for n in nodes
            if text and (n.node_id.casefold().startswith(text)
                         or n.device_name.casefold().startswith(text))
        ]  # fmt: skip
        if len(prefixed) == 1:
            return prefixed[0]
        names = ", ".join(n.device_name or n.node_id for n in nodes)
        if prefixed:
            return f"“{wanted}” matches several machines: {names}. Name one exactly."
        return f"No machine called “{wanted}”. Yours: {names}."

    async def go_live_once(self, binding: Binding, ticket: str | None) -> ConnectedSession:
        """The bound session live here, made so once however many callers race to it."""
        async with self._reviving.setdefault(binding.session_id, asyncio.Lock()):
            live = self.live.get(binding.session_id)
            return live or await self._go_live(binding, ticket=ticket)

    async def _go_live(self, binding: Binding, ticket: str | None) -> ConnectedSession:
        if not self._tasks.running:
            await self._tasks.start()
        cursor = await self.store.cursor(binding.session_id)  # rule 4; None for a new session
        link = SessionLink(
            self.edge, binding.subject, binding.session_id, ticket=ticket, last_message_id=cursor
        )

        def redact(text: str) -> str:  # the session's chat redactor, `.env` values included
            redactor = renderer.redactor
            return redactor.redact(text) if redactor is not None else text

        audit = EdgeAuditSink(self.edge, binding.subject, binding.session_id, redact=redact)
        platform = self._platform
        if self.cluster.clustered:  # rule 10: posts stop the moment the lease is gone
            platform = FencedPlatform(platform, self.cluster, binding.session_id)
        renderer = SessionRenderer(
            platform,
            binding.conversation,
            binding.session_id,
            send_frame=link.send,
            options=self.settings.render.for_node(binding.node_id),
            store=self.store,
            audit=audit,  # rule 9
            fingerprints=self._fingerprints,
        )
        live = ConnectedSession(link, renderer, on_end=self._ended_elsewhere, store=self.store)
        self.live[binding.session_id] = live
        live.start(self._tasks)
        return live

    async def _revive(self, binding: Binding) -> ConnectedSession:
        """The binding's live session, reconnecting it with a fresh ticket if needed."""
        lock = self._reviving.setdefault(binding.session_id, asyncio.Lock())
        async with lock:
            live = self.live.get(binding.session_id)
            if live is not None:
                return live
            if not await self.cluster.claim(binding.session_id):  # rule 10
                raise HeldElsewhere(binding.session_id)
            try:
                ticket = await self.edge.new_ticket(binding.subject, binding.session_id)
                live = await self._go_live(binding, ticket)
            except BaseException as exc:
                await self.cluster.release(binding.session_id)
                if isinstance(exc, EdgeApiError) and exc.status in (403, 404):
                    await self.store.mark_ended(binding.session_id)
                raise
            await self._mode_again(live)
            await model_command.model_again(self.store, live)  # and the model chosen
            return live

    async def _mode_again(self, live: ConnectedSession) -> None:
        """The mode chosen from chat, known to the thread and sent again to the session it
        revives (gateway.rendering.render rule 11): an agent restarted meanwhile gets it back."""
        name = await self.store.session_mode(live.session_id)
        mode_id = CHAT_MODES.get(name or "")
        if mode_id is None:
            return
        live.renderer.mode_line.shown = mode_id
        try:
            await live.set_mode(mode_id)
        except ConnectionError:  # the link's own end is reported by its pump (rule 5)
            log.info("session %s: its mode could not be sent again", live.session_id)

    async def lease_lost(self, session_id: str) -> None:
        """Rule 10: another replica renders the session now; let it go, ending nothing."""
        live = self.live.pop(session_id, None)
        if live is not None:
            await live.close()

    async def _ended_elsewhere(self, live: ConnectedSession) -> None:
        """Rule 5: the link ended without us closing it."""
        if self.live.get(live.session_id) is not live:
            return
        del self.live[live.session_id]
        if live.lease_lost:  # rule 10: not an end; whoever claims it next renders it
            await self.cluster.release(live.session_id)
            return
        await live.renderer.queue.clear()  # what waited will not run (gateway.sessions.busy)
        await self.store.mark_ended(live.session_id)
        await self.cluster.release(live.session_id)
        try:
            await self._platform.send_message(live.renderer.conversation, "⏹ " + SESSION_ENDED)
        except Exception:
            log.warning("could not tell a conversation its session ended", exc_info=True)

    # --- finding a conversation's session ----------------------------------------------------

    def _condition(self) -> asyncio.Condition:
        if self._started is None:
            self._started = asyncio.Condition()
        return self._started

    async def settled_binding(self, conversation: ConversationRef) -> Binding | None:
        """The conversation's binding, once no start under its channel is in progress."""
        binding = await self.store.get(conversation)
        where = _channel_key(conversation)
        if binding is None and where in self._starting:
            async with self._condition():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(
                        self._condition().wait_for(lambda: where not in self._starting),
                        START_WAIT_S,
                    )
            binding = await self.store.get(conversation)
        return binding

    async def _binding(self, invocation: Invocation) -> Binding | str:
        binding = await self.settled_binding(invocation.conversation)
        subject = self.subject_of(invocation)
        if (binding is None or binding.ended) and invocation.conversation.thread_id is None:
            binding = await self.store.latest_in_channel(invocation.conversation, subject) or (
                binding
            )
        if binding is None:
            return NO_SESSION
        if binding.ended:
            return SESSION_ENDED
        if binding.subject != subject:
            return NOT_YOURS
        return binding

    async def live_session(self, invocation: Invocation) -> ConnectedSession | str:
        """The invocation's session, live (reconnected if needed), or why there is none."""
        binding = await self._binding(invocation)
        if isinstance(binding, str):
            return binding
        try:
            return await self._revive(binding)
        except EdgeApiError as exc:
            return refusal(exc)

    # --- the verbs ---------------------------------------------------------------------------

    async def set_mode(self, invocation: Invocation, mode: str | None) -> str | None:
        return await mode_command.set_mode(self, invocation, mode)

    async def worktree(self, invocation: Invocation, action: str | None) -> str | None:
        return await worktree_command.worktree(self, invocation, action)

    async def resume_session(self, invocation: Invocation, pick: str | None = None) -> str | None:
        return await resume_command.resume(self, invocation, pick)

    async def fork_session(self, invocation: Invocation) -> str | None:
        return await fork_command.fork(self, invocation)

    async def start_here(self, invocation: Invocation, request: PromptRequest) -> str | None:
        from gateway.sessions.starting import Starter  # it builds on this module

        if self._starter is None:
            self._starter = Starter(self)
        return await self._starter.start_here(invocation, request)
