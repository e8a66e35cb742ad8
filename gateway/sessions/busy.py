"""Busy is visible (issue 16 §5): prompts waiting behind a running turn, marked in the chat.

The client runs one turn at a time and queues a prompt sent during a turn (client.sessions.session
rule 3, dps-profile §6); the gateway only shows it. Rules:

1. A prompt is *queued* when, the moment it is sent, a turn is running or an earlier prompt of
   the session has not started yet. A prompt sent to an idle session is not marked.
2. A queued prompt's chat message gets 🕒, and the conversation gets one line, "🕒 queued (n)",
   n the number of prompts waiting, edited in place as n changes and deleted when it drops to
   0: one line per session rather than one reply per message, because reactions and edits are
   cheap and new messages are not (platform rate limits).
3. When a queued prompt's turn starts, its 🕒 comes off (the renderer then puts ⏳ on, as for
   any prompt) and the line counts one less. The client runs prompts in order, so prompts sent
   before the one that started and never seen starting (frames lost in a gap) leave the queue
   too. A prompt the session refused (a `session.error` naming it, such as `TURN_QUEUE_FULL`)
   leaves it the same way (the renderer marks it ❌). When the session ends here, waiting
   prompts will never run: their 🕒 and the line are taken off (`clear`).
4. Busy mode is a per-channel setting, `queue` (the default) or `interrupt`, kept in the
   conversation store (it survives a restart) and applied to every session thread under the
   channel. In `interrupt` a new prompt first cancels the running turn
   (`control.prompt.cancel`, DPS §6), which then ends ⏹, and is then sent. DPS has no verb
   that withdraws a prompt the client holds, so a turn that starts while an interrupting
   prompt waits behind it (a prompt sent just before, not started yet when the new one went
   out) is cancelled as it starts: the newest prompt is the one that runs. A cancel that lost
   the race with its turn's end (the client answers `NO_SUCH_TURN`; the renderer may still be
   posting a turn the client has finished) is not shown: the turn ended all the same.
5. Decorations are best effort: a failed reaction or line is logged and never stops a prompt.
6. The marks survive a gateway restart: each marked prompt (its chat message and user) and
   the line's message are kept in the conversation store, in the order sent, and a renderer
   made anew reads them before it first touches its queue. A queued prompt whose turn starts
   after a restart still loses its 🕒 and gets ⏳, then ✅, the line still counts down.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gateway.platform import ChatPlatform, ConversationRef, MessageRef
from rawp.events import PromptCancel, PromptRequest, SessionError
from rawp.frames import Frame, make_frame

if TYPE_CHECKING:
    from gateway.sessions.live import ConnectedSession
    from gateway.storage.conversation_store import ConversationStore

LINE_KEY = "busy/queue-line"  # the post key the queue line's message is recorded under (rule 6)
CANCELS_KEPT = 64  # the interrupts' cancel frames whose NO_SUCH_TURN is not shown (rule 4)

log = logging.getLogger(__name__)

QUEUED = "🕒"
QUEUE, INTERRUPT = "queue", "interrupt"
BUSY_MODES = (QUEUE, INTERRUPT)
MODE_TEXT = {
    QUEUE: "a message sent while a turn runs waits its turn (🕒) and then runs, in order.",
    INTERRUPT: "a message sent while a turn runs stops that turn (⏹) and then runs.",
}


def queue_line(waiting: int) -> str:
    """The conversation's one line about its waiting prompts (rule 2)."""
    if waiting == 1:
        return f"{QUEUED} queued (1) — runs when the current turn ends."
    return f"{QUEUED} queued ({waiting}) — they run in order after the current turn."


@dataclass
class Waiting:
    """A prompt sent and not yet started."""

    prompt_id: str  # the `control.prompt.request` frame's message_id
    message: MessageRef | None  # the user's chat message
    queued: bool  # rule 1: sent behind a running turn or an unstarted prompt
    user_id: str | None = None
    interrupts: bool = False  # sent in `interrupt` mode: turns started before it stop (rule 4)
    marked: bool = False  # 🕒 is on its message (or would be, on a platform without reactions)


class PromptQueue:
    """The bookkeeping of rules 1 and 3: which sent prompts have not started, in order."""

    def __init__(self) -> None:
        self._unstarted: OrderedDict[str, Waiting] = OrderedDict()

    def sent(
        self,
        prompt_id: str,
        message: MessageRef | None,
        turn_running: bool,
        interrupts: bool = False,
        user_id: str | None = None,
    ) -> bool:
        """Record a prompt about to be sent; True when it is queued (rule 1)."""
        queued = turn_running or bool(self._unstarted)
        self._unstarted[prompt_id] = Waiting(prompt_id, message, queued, user_id, interrupts)
        return queued

    def restore(self, waiting: list[Waiting]) -> None:
        """Prompts marked before a restart (rule 6): ahead of any sent since."""
        since = list(self._unstarted.items())
        self._unstarted.clear()
        for w in waiting:
            self._unstarted.setdefault(w.prompt_id, w)
        self._unstarted.update(since)

    @property
    def interrupted(self) -> bool:
        """A prompt that interrupts waits: the turn starting now is to stop (rule 4)."""
        return any(w.interrupts for w in self._unstarted.values())

    def get(self, prompt_id: str) -> Waiting | None:
        return self._unstarted.get(prompt_id)

    def started(self, prompt_id: str) -> list[Waiting]:
        """The prompt's turn started: it and every prompt sent before it leave (rule 3).
        A prompt this queue never saw (sent by another edge) changes nothing."""
        if prompt_id not in self._unstarted:
            return []
        gone = []
        while self._unstarted:
            key, waiting = self._unstarted.popitem(last=False)
            gone.append(waiting)
            if key == prompt_id:
                break
        return gone

    def refused(self, prompt_id: str) -> list[Waiting]:
        """The session refused the prompt: it alone leaves (rule 3)."""
        waiting = self._unstarted.pop(prompt_id, None)
        return [waiting] if waiting is not None else []

    def clear(self) -> list[Waiting]:
        gone = list(self._unstarted.values())
        self._unstarted.clear()
        return gone

    @property
    def waiting(self) -> int:
        """How many prompts the line counts: queued ones, marked."""
        return sum(1 for w in self._unstarted.values() if w.queued and w.marked)


Decorate = Callable[[Awaitable[Any]], Awaitable[None]]
SendFrame = Callable[[Frame], Awaitable[None]]


class QueueMarker:
    """Rules 2 and 3 on a platform: the 🕒 reactions and the one queue line of a session;
    and rule 4's cancel of a turn that starts in front of an interrupting prompt."""

    def __init__(
        self,
        platform: ChatPlatform,
        conversation: ConversationRef,
        best_effort: Decorate,
        *,
        session_id: str,
        send_frame: SendFrame,
        store: ConversationStore | None = None,
    ) -> None:
        self.queue = PromptQueue()
        self._store = store
        self._loaded = store is None
        self.interrupt_next = False  # the next prompt expected is sent in `interrupt` mode
        self._platform = platform
        self._conversation = conversation
        self._best_effort = best_effort
        self._session_id = session_id
        self._send_frame = send_frame
        self._cancels: deque[str] = deque(maxlen=CANCELS_KEPT)  # their frames' message_ids
        self._line: MessageRef | None = None
        self._line_count = 0
        # The user's task marks a prompt while the pump may be starting its turn: one at a time.
        self._lock = asyncio.Lock()

    def expect(
        self,
        prompt_id: str,
        message: MessageRef | None,
        turn_running: bool,
        user_id: str | None = None,
    ) -> None:
        """Before the prompt frame is sent (so its turn start always finds it)."""
        interrupts, self.interrupt_next = self.interrupt_next, False
        self.queue.sent(prompt_id, message, turn_running, interrupts, user_id)

    async def mark(self, prompt_id: str) -> None:
        """After the prompt frame is sent: 🕒 and the line, if it is queued and still waits."""
        async with self._lock:
            await self._load()
            waiting = self.queue.get(prompt_id)
            if waiting is None or not waiting.queued or waiting.marked:
                return  # it started (or was refused) already, or runs at once
            waiting.marked = True
            if self._store is not None:  # rule 6
                message_id = waiting.message.message_id if waiting.message else None
                await self._store.record_queued(
                    self._session_id, prompt_id, message_id, waiting.user_id
                )
            await self._react(waiting.message, add=True)
            await self._sync_line()

    async def started(self, prompt_id: str, turn_id: str) -> Waiting | None:
        """The prompt's turn started; its `Waiting` when it was marked (after a restart, the
        renderer learns from it which chat message and user the turn is for)."""
        async with self._lock:
            await self._load()
            gone = self.queue.started(prompt_id)
            await self._unmark(gone)
            if self.queue.interrupted:  # rule 4: a newer prompt said to interrupt
                try:
                    await self._send_frame(self.cancel_frame(turn_id))
                except ConnectionError:
                    log.info("the turn %s was not cancelled: the session's link is gone", turn_id)
        started = gone[-1] if gone else None
        return started if started is not None and started.marked else None

    def cancel_frame(self, turn_id: str) -> Frame:
        """An interrupt's `control.prompt.cancel`, remembered so that losing the race with
        the turn's end is not reported (rule 4)."""
        cancel = make_frame(
            "control.prompt.cancel", PromptCancel(turn_id=turn_id), session_id=self._session_id
        )
        self._cancels.append(cancel.message_id)
        return cancel

    def lost_race(self, error: SessionError) -> bool:
        """True for the client's `NO_SUCH_TURN` answer to one of this session's interrupts."""
        return error.code == "NO_SUCH_TURN" and error.ref_message_id in self._cancels

    async def refused(self, prompt_id: str) -> None:
        async with self._lock:
            await self._load()
            await self._unmark(self.queue.refused(prompt_id))

    async def clear(self) -> None:
        """The session ended here: nothing that waits will run (rule 3)."""
        async with self._lock:
            await self._load()
            await self._unmark(self.queue.clear())

    async def _load(self) -> None:
        """Rule 6: what a gateway before this one marked, read once."""
        if self._loaded or self._store is None:
            return
        self._loaded = True
        rows = await self._store.queued(self._session_id)
        self.queue.restore(
            [
                Waiting(
                    prompt_id,
                    MessageRef(self._conversation, message_id) if message_id else None,
                    queued=True,
                    user_id=user_id,
                    marked=True,
                )
                for prompt_id, message_id, user_id in rows
            ]
        )
        line_id = await self._store.recorded(self._session_id, LINE_KEY)
        if line_id:  # an INTENT ("") is a post whose message was never known: nothing to edit
            self._line = MessageRef(self._conversation, line_id)
            self._line_count = self.queue.waiting

    def forget(self, prompt_id: str) -> None:
        """The prompt frame never left (the link was gone): nothing to show."""
        self.queue.refused(prompt_id)

    async def _unmark(self, gone: list[Waiting]) -> None:
        marked = [w for w in gone if w.marked]
        if marked and self._store is not None:
            await self._store.forget_queued(self._session_id, [w.prompt_id for w in marked])
        for waiting in marked:
            await self._react(waiting.message, add=False)
        if marked:
            await self._sync_line()

    async def _react(self, message: MessageRef | None, *, add: bool) -> None:
        if message is None or not self._platform.limits.supports_reactions:
            return
        if add:
            await self._best_effort(self._platform.add_reaction(message, QUEUED))
        else:
            await self._best_effort(self._platform.remove_reaction(message, QUEUED))

    async def _sync_line(self) -> None:
        """Post, edit or delete the line so that it counts what waits (rule 2)."""
        count = self.queue.waiting
        if count == self._line_count:
            return
        line, self._line_count = self._line, count
        if count == 0:
            self._line = None
            if line is not None:
                await self._best_effort(self._platform.delete_message(line))
                await self._record_line(None)
            return
        if line is not None and self._platform.limits.supports_edit:
            await self._best_effort(self._platform.edit_message(line, queue_line(count)))
            return
        if line is not None:
            await self._best_effort(self._platform.delete_message(line))
        try:
            self._line = await self._platform.send_message(self._conversation, queue_line(count))
        except Exception:
            self._line = None
            log.warning("could not post the queue line", exc_info=True)
        await self._record_line(self._line)

    async def _record_line(self, line: MessageRef | None) -> None:
        if self._store is None:
            return
        if line is None:
            await self._store.forget_post(self._session_id, LINE_KEY)
        else:
            await self._store.record_post(self._session_id, LINE_KEY, line.message_id)


# --- busy mode (rule 4) -----------------------------------------------------------------------


async def busy_mode(store: ConversationStore, conversation: ConversationRef) -> str:
    """The channel's busy mode; `queue` unless someone chose otherwise."""
    return await store.busy_mode(conversation.platform, conversation.channel_id) or QUEUE


async def set_busy_mode(
    store: ConversationStore, conversation: ConversationRef, mode: str | None
) -> str:
    """`/rawp busy [queue|interrupt]`: the answer for the user (no mode: the current one)."""
    if not mode or not mode.strip():
        current = await busy_mode(store, conversation)
        return f"Busy mode in this channel is `{current}`: {MODE_TEXT[current]}"
    chosen = mode.strip().casefold()
    if chosen not in BUSY_MODES:
        return f"❌ Busy mode is `{QUEUE}` or `{INTERRUPT}`, not “{mode.strip()}”."
    await store.set_busy_mode(conversation.platform, conversation.channel_id, chosen)
    return f"Busy mode in this channel is now `{chosen}`: {MODE_TEXT[chosen]}"


async def send_prompt(
    store: ConversationStore,
    live: ConnectedSession,
    request: PromptRequest,
    message: MessageRef | None,
    user_id: str,
    prompt_id: str | None = None,
) -> None:
    """Send a chat user's prompt as the channel's busy mode says (rule 4): in `interrupt`,
    the running turn is cancelled first. Raises ConnectionError when the link is gone."""
    interrupt = await busy_mode(store, live.renderer.conversation) == INTERRUPT
    turn = live.renderer.turn
    if interrupt and turn is not None:
        await live.chat.link.send(live.renderer.queue.cancel_frame(turn.turn_id))
    # Read by the renderer's `expect_prompt`, at the start of `send_prompt`: no await between.
    live.renderer.queue.interrupt_next = interrupt
    await live.chat.send_prompt(request, message=message, user_id=user_id, message_id=prompt_id)
