"""The `ChatPlatform` seam: everything the gateway needs from a chat platform, and nothing more.

Adapters (Discord, Slack, console) implement this class; the gateway core talks to a platform
only through it (style.md §4–§5), so no platform type ever crosses into `gateway/`. What wraps a
platform (redaction, the shared budget, metrics) wraps it through one hook
(gateway.platform_middleware), never by forwarding each method. References
to conversations and messages are small opaque values: the adapter puts whatever ids it needs
into them and the core only hands them back.

Rules an implementation keeps:

1. Every operation is async and raises nothing for a message that is already gone (a deleted
   message, an expired interaction): the renderer treats the platform as best effort for
   decorations (reactions, typing, status) and as reliable for content (`send_message`).
2. Text handed to `send_message` / `edit_message` is already within `limits.max_message_length`
   (the renderer chunks it, gateway.rendering.chunker); an adapter may split it further into blocks.
3. Rate limits are the adapter's business: it waits out a 429 (Retry-After) and never drops,
   duplicates or reorders a message.
4. The `*_keyed` variants carry the renderer's deterministic post key (gateway.rendering.posting). A
   platform that can do so makes a repeated keyed post a no-op (Discord: `nonce` with
   `enforce_nonce`) or finds a keyed post again (Slack: message metadata); the defaults post
   plainly and find nothing, which leaves only the gap between a post and its record open.
5. `upload_file` is handed a whole file no larger than `limits.max_upload_bytes` (the core
   checks; gateway.rendering.uploads). A platform without uploads keeps the default, which posts one
   line naming the file instead.
"""

from __future__ import annotations

import abc
import inspect
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rawp.events import Command, FileCandidate, PromptRequest

if TYPE_CHECKING:
    from gateway.approvals.prompt_board import PromptBoard
    from gateway.replicas.platform_budget import PlatformRoutes

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ConversationRef:
    """Where a session talks: a thread (Discord thread, Slack thread_ts, the console)."""

    platform: str
    channel_id: str
    thread_id: str | None = None


@dataclass(frozen=True, slots=True)
class MessageRef:
    """One message the platform holds, as the adapter identifies it."""

    conversation: ConversationRef
    message_id: str


@dataclass(frozen=True, slots=True)
class PlatformLimits:
    """What a platform allows, counted as the platform counts it (A-35).

    `max_message_length` is in code points (Python `len`): Discord counts 2,000 code points per
    message; Slack counts characters of `text`. `max_block_length`, where set, is a smaller unit
    inside one message (Slack: 3,000 per section block) that the adapter splits into with the
    same chunker. `typing_expiry_s` is None when the platform has no typing indicator at all.
    """

    max_message_length: int
    max_block_length: int | None = None
    typing_expiry_s: float | None = None
    supports_reactions: bool = True
    supports_edit: bool = True
    max_buttons: int = 5
    # The largest file one upload may carry, in bytes; 0: the platform takes no files.
    max_upload_bytes: int = 0

    @property
    def typing_refresh_s(self) -> float:
        """How often to refresh typing: well inside the expiry (G-NS-10, A-34).

        Discord expires typing after 10 s → every 4 s; Slack's status lasts 2 minutes → 48 s.
        A platform with no typing API still gets a 5 s tick: the renderer uses it as its timer.
        """
        if self.typing_expiry_s is None:
            return 5.0
        return max(1.0, self.typing_expiry_s * 0.4)


@dataclass(frozen=True, slots=True)
class ChoiceOption:
    """One button of an interaction prompt (DPS §4 `options[]`)."""

    option_id: str
    label: str
    # allow_once / allow_always / reject_once / reject_always: adapters may colour by it.
    kind: str | None = None


@dataclass(frozen=True, slots=True)
class InteractionPrompt:
    """An `agent.interaction.request` as the platform shows it: text and buttons."""

    interaction_id: str
    kind: str  # approval / choice / input
    prompt: str
    options: Sequence[ChoiceOption] = ()
    # Who may answer; empty means anyone in the conversation (the core checks it, §8 approvals).
    allowed_user_ids: frozenset[str] = field(default_factory=frozenset)


@dataclass(frozen=True, slots=True)
class ModeRow:
    """The agent's modes as a row of buttons (issue 30 §1): the chat names offered, in order,
    and the one the agent is in (None: one chat does not name). A press is `/rawp mode <name>`
    (adapters: `ConversationHooks.set_mode`), so the button carries only the name."""

    names: tuple[str, ...]
    current: str | None = None


@dataclass(frozen=True, slots=True)
class Choice:
    """What a user answered: a button (`option_id`) or, for `input`, free `text`."""

    user_id: str
    option_id: str | None = None
    text: str | None = None


def size_text(size: int) -> str:
    """A byte count as chat apps show it: `512 bytes`, `4.2 KB`, `10.0 MB` (powers of 1,024, as
    Discord's "10 MB" limit is 10 × 1,024² bytes)."""
    if size < 1024:
        return f"{size} bytes"
    scaled = float(size)
    for unit in ("KB", "MB", "GB"):
        scaled /= 1024
        if scaled < 1024 or unit == "GB":
            break
    return f"{scaled:.1f} {unit}"


def no_uploads_line(platform: str, name: str, size: int) -> str:
    return (
        f"📎 The agent sent {name} ({size_text(size)}); the {platform} here cannot show "
        "files, so it was not posted."
    )


class ChatPlatform(abc.ABC):
    """A chat platform as the gateway sees it. See the module docstring for the rules."""

    name: str
    # Each adapter declares what its platform allows (gateway.platform never lists platforms).
    limits: PlatformLimits
    # True where a user id is unique only within its workspace (Slack's U… ids per team): the
    # master's user is then `platform:workspace:user` (gateway.sessions.conversations rule 1).
    user_ids_per_workspace: bool = False
    # The prompts this platform shows (gateway.approvals.prompt_board): an adapter that pushes its
    # presses there keeps the default `wait_for_choice`.
    prompt_board: PromptBoard | None = None
    # Its rate-limit routes, declared by the adapter (adapters/<platform>/routes.py) and spent by
    # the shared budget (gateway.replicas.budgeted_platform); None: not budgeted (the console).
    rate_routes: PlatformRoutes | None = None

    # --- content ----------------------------------------------------------------------------

    @abc.abstractmethod
    async def send_message(self, conversation: ConversationRef, text: str) -> MessageRef:
        """Post one message (already within the limit) and return its reference."""

    async def send_keyed(self, conversation: ConversationRef, text: str, key: str) -> MessageRef:
        """`send_message` under a post key (rule 4)."""
        return await self.send_message(conversation, text)

    async def find_keyed(self, conversation: ConversationRef, key: str) -> MessageRef | None:
        """The message posted under `key` if the platform can tell (rule 4), else None."""
        return None

    async def upload_file(
        self, conversation: ConversationRef, name: str, mime_type: str, data: bytes
    ) -> MessageRef | None:
        """Post `data` as a file named `name` (rule 5). Platforms without uploads (the
        console) keep this default: one line that names the file and says it stayed behind."""
        return await self.send_message(conversation, no_uploads_line(self.name, name, len(data)))

    async def upload_keyed(
        self, conversation: ConversationRef, name: str, mime_type: str, data: bytes, key: str
    ) -> MessageRef | None:
        """`upload_file` under a post key (rule 4)."""
        return await self.upload_file(conversation, name, mime_type, data)

    @abc.abstractmethod
    async def edit_message(self, message: MessageRef, text: str) -> None:
        """Replace a message's text (task lists, the interim status message)."""

    @abc.abstractmethod
    async def delete_message(self, message: MessageRef) -> None:
        """Remove a message; a message already gone is not an error."""

    @abc.abstractmethod
    async def send_hidden(self, conversation: ConversationRef, title: str, text: str) -> None:
        """Post text the reader must choose to reveal: Discord spoilers with `||` neutralised,
        Slack a collapsed/ephemeral form, the console a spoiler line (G-NS-16)."""

    @abc.abstractmethod
    async def send_ephemeral(self, conversation: ConversationRef, user_id: str, text: str) -> None:
        """A note only `user_id` sees (refusals); platforms without it post it plainly."""

    async def approvers(self, conversation: ConversationRef) -> frozenset[str]:
        """Who may answer any approval in `conversation`, not only the turn's user: the
        members of the configured approver roles or groups, read when a prompt opens (so a
        change of membership counts). None by default."""
        return frozenset()

    # --- decorations ------------------------------------------------------------------------

    @abc.abstractmethod
    async def add_reaction(self, message: MessageRef, emoji: str) -> None: ...

    @abc.abstractmethod
    async def remove_reaction(self, message: MessageRef, emoji: str) -> None: ...

    @abc.abstractmethod
    async def trigger_typing(self, conversation: ConversationRef) -> None:
        """Show "typing…" once; it expires after `limits.typing_expiry_s` (G-NS-10)."""

    @abc.abstractmethod
    async def set_status(self, conversation: ConversationRef, text: str | None) -> None:
        """Show (or clear, with None) the conversation's status line: Slack's
        `assistant.threads.setStatus`, the console's status line; a no-op where none exists."""

    # --- interactions -----------------------------------------------------------------------

    @abc.abstractmethod
    async def send_interaction(
        self, conversation: ConversationRef, prompt: InteractionPrompt
    ) -> MessageRef:
        """Post the prompt with one button per option."""

    async def send_interaction_keyed(
        self, conversation: ConversationRef, prompt: InteractionPrompt, key: str
    ) -> MessageRef:
        """`send_interaction` under a post key (rule 4)."""
        return await self.send_interaction(conversation, prompt)

    async def wait_for_choice(self, message: MessageRef, timeout_s: float | None) -> Choice | None:
        """The next answer to the prompt posted as `message`; None on timeout or when the
        platform can no longer deliver one. Called again after a refused answer.

        The default waits on `prompt_board`, where the adapter pushes each press; a platform
        without one (the console reads its own input) overrides this."""
        if self.prompt_board is None:
            raise NotImplementedError(f"{self.name}: no prompt board and no wait_for_choice")
        return await self.prompt_board.wait(message, timeout_s)

    def deliver_choice(self, conversation: ConversationRef, interaction_id: str, choice: Choice):
        """A press another replica received, pushed to this platform's open prompt in
        `conversation` (gateway.replicas.cluster_routing rule 3); False when nobody waits for it
        here. Adapters whose board key is not the conversation override `where_of`."""
        from gateway.approvals.prompt_board import option_of  # it builds on this module

        where = self.where_of(conversation)
        waiting = self.prompt_board.find(where, interaction_id) if self.prompt_board else None
        if waiting is None:
            return False
        if choice.option_id:  # `#index` is decoded where the prompt is known (prompt_board)
            choice = Choice(choice.user_id, option_of(waiting.prompt, choice.option_id))
        return self.prompt_board.answer(where, interaction_id, choice)

    def where_of(self, conversation: ConversationRef):
        """The prompt board's key for `conversation` (gateway.approvals.prompt_board)."""
        return (conversation.channel_id, conversation.thread_id)

    @abc.abstractmethod
    async def close_interaction(self, message: MessageRef, outcome: str) -> None:
        """Disable the prompt's buttons and show how it was answered."""

    async def show_modes(
        self,
        conversation: ConversationRef,
        text: str,
        row: ModeRow,
        key: str,
        message: MessageRef | None = None,
    ) -> MessageRef | None:
        """Post `text` with one button per mode of `row` under a post key (issue 30 §1), or,
        given the `message` it posted, show `row` there instead. None: this platform has no
        buttons for it (the default), and `/rawp mode` is the way."""
        return None

    # --- conversations ----------------------------------------------------------------------

    async def open_thread(self, conversation: ConversationRef, title: str) -> ConversationRef:
        """Open a thread for a new session under `conversation` (a channel) and return it.

        A platform without threads (the console) keeps talking where it is: the default.
        """
        return conversation

    async def open_thread_on(self, message: MessageRef, title: str) -> ConversationRef:
        """Open a session's thread on the user's own message (issue 16 §1: a mention or a
        direct message starts a session there) and return it. Discord threads the message
        (a DM, which has no threads, is the conversation itself); Slack's thread is the
        message's ts. The default opens a thread under the message's conversation."""
        return await self.open_thread(message.conversation, title)


# --- the conversation seam ------------------------------------------------------------------
#
# Platform commands and thread messages arrive in an adapter; what they *do* (start a session on
# the master, send a prompt, list nodes) is the conversation layer's business. Adapters hand it
# platform-neutral values through `ConversationHooks`; the defaults answer that no master is
# connected, so an adapter runs (and is testable) before the conversation layer exists.

NOT_CONNECTED = "The gateway is not connected to a master yet."


@dataclass(frozen=True, slots=True)
class Invocation:
    """Who asked for something, and where (ids as the platform spells them)."""

    user_id: str
    conversation: ConversationRef
    message: MessageRef | None = None  # the user's chat message, for ⏳/✅ on a prompt
    workspace_id: str | None = None  # Discord guild, Slack team


@dataclass(frozen=True, slots=True)
class Suggestion:
    """One autocomplete entry: what the user sees and what comes back when picked."""

    label: str
    value: str


@dataclass(frozen=True, slots=True)
class StaleChoice:
    """A button answer nobody is waiting for (the gateway restarted since it was posted)."""

    invocation: Invocation
    interaction_id: str
    choice: Choice


class ConversationHooks:
    """What the adapters ask of the conversation layer. Every answer is text for the user
    (None: nothing to say); suggestions are cut to the platform's maximum by the adapter."""

    async def start_session(
        self, invocation: Invocation, node: str, agent: str, worktree: bool = False
    ) -> str | None:
        return NOT_CONNECTED

    async def prompt(self, invocation: Invocation, request: PromptRequest) -> str | None:
        return NOT_CONNECTED

    async def start_here(self, invocation: Invocation, request: PromptRequest) -> str | None:
        """A message addressed to the bot outside a session (a mention, a direct message):
        its conversation's session gets it as a prompt, or one starts on it
        (gateway.sessions.starting)."""
        return NOT_CONNECTED

    async def stop(self, invocation: Invocation) -> str | None:
        return NOT_CONNECTED

    async def end(self, invocation: Invocation) -> str | None:
        return NOT_CONNECTED

    async def pair(self, invocation: Invocation) -> str | None:
        return NOT_CONNECTED

    async def web_link(self, invocation: Invocation) -> str | None:
        """A one-time login link to the web edge for the caller (issue 21), shown to them only."""
        return NOT_CONNECTED

    async def list_nodes(self, invocation: Invocation) -> str | None:
        return NOT_CONNECTED

    async def list_sessions(self, invocation: Invocation) -> str | None:
        return NOT_CONNECTED

    async def suggest_nodes(self, invocation: Invocation, typed: str) -> list[Suggestion]:
        return []

    async def suggest_agents(
        self, invocation: Invocation, node: str | None, typed: str
    ) -> list[Suggestion]:
        return []

    async def search_files(self, invocation: Invocation, typed: str) -> list[FileCandidate]:
        """`control.file.search` in the invocation's session (K-10)."""
        return []

    async def agent_commands(self, invocation: Invocation) -> list[Command]:
        """The session's published slash commands (`agent.commands.publish`, G-CMD-07)."""
        return []

    async def stale_choice(self, stale: StaleChoice) -> str | None:
        return "This question is no longer open."

    async def usage(self, invocation: Invocation) -> str | None:
        """Tokens and cost of the invocation's session, today and this month, per node (issue
        16 §4); adapters show the answer to the invoking user only."""
        return NOT_CONNECTED

    async def set_busy(self, invocation: Invocation, mode: str | None) -> str | None:
        """`busy queue|interrupt` for the invocation's channel; no mode: say which is set
        (gateway.sessions.busy)."""
        return NOT_CONNECTED

    async def set_mode(self, invocation: Invocation, mode: str | None) -> str | None:
        """`mode plan|ask|accept-edits` for the invocation's session; no mode: say which
        (gateway.sessions.mode_command)."""
        return NOT_CONNECTED

    async def set_model(self, invocation: Invocation, model: str | None) -> str | None:
        """`model <name>` for the invocation's session; no name: its model and the choices
        (gateway.sessions.model_command)."""
        return NOT_CONNECTED

    async def suggest_models(self, invocation: Invocation, typed: str) -> list[Suggestion]:
        """The models the invocation's session's agent offers, for autocomplete."""
        return []

    async def worktree(self, invocation: Invocation, action: str | None) -> str | None:
        """`worktree diff|merge|discard` for the invocation's session's git worktree
        (gateway.sessions.worktree_command)."""
        return NOT_CONNECTED

    async def schedule(self, invocation: Invocation, text: str | None) -> str | None:
        """`schedule "<cron or phrase>" <prompt>`, `schedule pause|resume|delete <id>`, and
        `schedules` as `schedule list` (gateway.sessions.schedule_command)."""
        return NOT_CONNECTED

    async def resume_session(self, invocation: Invocation, pick: str | None = None) -> str | None:
        """`resume`: the invocation's ended session goes on in its thread with the agent's
        own memory; with no session there, or `list`, the terminal conversations to pick up;
        `resume <pick>` picks one into a new thread (gateway.sessions.resume_command)."""
        return NOT_CONNECTED

    async def suggest_terminal(self, invocation: Invocation, typed: str) -> list[Suggestion]:
        """The terminal conversations `resume` can pick, for autocomplete."""
        return []

    async def fork_session(self, invocation: Invocation) -> str | None:
        """`fork`: a copy of the invocation's session's conversation goes on in a new thread
        (gateway.sessions.fork_command)."""
        return NOT_CONNECTED


HOOK_FAILED = "⚠️ Something went wrong on our side; the gateway logged it. Please try again."


class GuardedHooks(ConversationHooks):
    """Hooks whose failures become an apology (or no suggestions) instead of an interaction
    left hanging: adapters wrap the conversation layer's hooks in this. Every hook of
    `ConversationHooks` is guarded by the loop below the class, so a hook added there is guarded
    without a forwarder written here."""

    def __init__(self, inner: ConversationHooks) -> None:
        self.inner = inner


def _guarded(name: str, listing: bool):
    """Hook `name`, run on the inner hooks; a failure is logged with its traceback and answered
    with an apology (or, for suggestions, nothing)."""

    async def hook(self: GuardedHooks, *args):
        try:
            answer = await getattr(self.inner, name)(*args)
        except Exception:
            _log.exception("conversation hook %s failed", name)
            return [] if listing else HOOK_FAILED
        return list(answer) if listing else answer

    hook.__name__ = hook.__qualname__ = name
    return hook


for _name, _hook in inspect.getmembers(ConversationHooks, inspect.iscoroutinefunction):
    if not _name.startswith("_"):  # `-> list[…]` hooks suggest; the rest answer in words
        _listing = str(_hook.__annotations__.get("return", "")).startswith("list")
        setattr(GuardedHooks, _name, _guarded(_name, _listing))
