"""The approval flow: `agent.interaction.request` → buttons → `control.interaction.response`.

Rules (issue 10 "Approvals", A-41):

1. Each request becomes one platform prompt with a button per option; it is answered at most
   once, with `parent_id` = the request's `message_id` (dps-profile §1, §6).
2. Only the user who started the turn, or a configured approver, may answer; anyone else gets
   an ephemeral refusal and the prompt stays open. With neither known, anyone may answer.
3. A click that names no offered option is refused the same way (a stale or forged button).
4. If `timeout_s` passes with no answer, the gateway sends nothing: the agent asked with that
   timeout and applies its own default; the prompt is closed with that outcome.
5. When the turn ends, prompts still open are closed ("the turn ended") and never answered.
6. A prompt is posted once per request across gateway restarts (gateway.posting); one posted
   before a restart is not waited for again here: a click on it reaches the session as a
   stale choice (gateway.conversations rule 4). Each wait is a task of the renderer's
   `TaskOwner`, so a failure is logged there and none outlives the renderer.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from gateway.platform import (
    ChatPlatform,
    Choice,
    ChoiceOption,
    ConversationRef,
    InteractionPrompt,
    MessageRef,
)
from gateway.posting import Poster
from rawp.clock import SYSTEM_CLOCK, Clock
from rawp.events import InteractionRequest, InteractionResponse
from rawp.frames import Frame, make_frame
from rawp.tasks import TaskOwner

log = logging.getLogger(__name__)

SendFrame = Callable[[Frame], Awaitable[None]]

TIMED_OUT = "⌛ No answer in time — the agent applies its default."
TURN_ENDED = "The turn ended before an answer."


@dataclass
class _Pending:
    turn_id: str | None
    message: MessageRef
    task: asyncio.Task[None]


class InteractionFlow:
    def __init__(
        self,
        platform: ChatPlatform,
        conversation: ConversationRef,
        session_id: str,
        send_frame: SendFrame,
        poster: Poster,
        tasks: TaskOwner,
        *,
        approver_ids: frozenset[str] = frozenset(),
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._platform = platform
        self._conversation = conversation
        self._session_id = session_id
        self._send_frame = send_frame
        self._poster = poster
        self._tasks = tasks
        self._approver_ids = approver_ids
        self._clock = clock
        self._pending: dict[str, _Pending] = {}

    @property
    def open_ids(self) -> list[str]:
        return list(self._pending)

    async def open(self, frame: Frame, request: InteractionRequest, starter_id: str | None) -> None:
        """Show the request's buttons and start waiting for its answer (rule 1)."""
        if request.interaction_id in self._pending:
            return  # the same request again (a replay): one prompt is enough
        allowed = self._approver_ids | ({starter_id} if starter_id else frozenset())
        prompt = InteractionPrompt(
            interaction_id=request.interaction_id,
            kind=request.kind,
            prompt=request.prompt,
            options=tuple(ChoiceOption(o.option_id, o.label, o.kind) for o in request.options),
            allowed_user_ids=frozenset(allowed),
        )
        message, posted_now = await self._poster.send_interaction(prompt)
        if not posted_now:
            return  # rule 6: posted before a restart
        task = self._tasks.spawn(
            self._await_answer(frame, request, prompt, message),
            name=f"interaction {request.interaction_id}",
        )
        self._pending[request.interaction_id] = _Pending(frame.turn_id, message, task)

    async def _await_answer(
        self, frame: Frame, request: InteractionRequest, prompt: InteractionPrompt, ref: MessageRef
    ) -> None:
        timeout = request.timeout_s
        deadline = None if timeout is None else self._clock.monotonic() + timeout
        try:
            while True:
                remaining = None if deadline is None else deadline - self._clock.monotonic()
                choice = None
                if remaining is None or remaining > 0:
                    choice = await self._platform.wait_for_choice(ref, remaining)
                if choice is None:  # rule 4
                    await self._platform.close_interaction(ref, TIMED_OUT)
                    return
                refusal = self._refusal(prompt, choice)
                if refusal:
                    await self._platform.send_ephemeral(self._conversation, choice.user_id, refusal)
                    continue
                await self._send_frame(
                    make_frame(
                        "control.interaction.response",
                        InteractionResponse(
                            interaction_id=request.interaction_id,
                            option_id=choice.option_id,
                            text=choice.text,
                        ),
                        session_id=self._session_id,
                        turn_id=frame.turn_id,
                        parent_id=frame.message_id,
                    )
                )
                await self._platform.close_interaction(ref, _outcome(prompt, choice))
                return
        except asyncio.CancelledError:
            raise
        except Exception:
            log.warning("interaction %s failed", request.interaction_id, exc_info=True)
        finally:
            self._pending.pop(request.interaction_id, None)

    def _refusal(self, prompt: InteractionPrompt, choice: Choice) -> str | None:
        """Why this answer is not accepted (rules 2 and 3), or None."""
        if prompt.allowed_user_ids and choice.user_id not in prompt.allowed_user_ids:
            return "Only the person who started this turn can answer this."
        offered = {o.option_id for o in prompt.options}
        if choice.option_id is not None and choice.option_id not in offered:
            return "That is not one of the choices."
        if choice.option_id is None and not (prompt.kind == "input" and choice.text):
            return "Please pick one of the choices."
        return None

    async def close_turn(self, turn_id: str | None) -> None:
        """Close what a finished turn left open (rule 5)."""
        for interaction_id, pending in list(self._pending.items()):
            if pending.turn_id == turn_id:
                await self._close(interaction_id, pending)

    async def close_all(self) -> None:
        for interaction_id, pending in list(self._pending.items()):
            await self._close(interaction_id, pending)

    async def _close(self, interaction_id: str, pending: _Pending) -> None:
        self._pending.pop(interaction_id, None)
        if pending.task is not asyncio.current_task():
            # Cancelled and awaited: no answer is sent after this. `asyncio.wait` does not
            # raise the child's CancelledError into this (uncancelled) task.
            pending.task.cancel()
            await asyncio.wait({pending.task})
        try:
            await self._platform.close_interaction(pending.message, TURN_ENDED)
        except Exception:
            log.warning("could not close interaction %s", interaction_id, exc_info=True)


def _outcome(prompt: InteractionPrompt, choice: Choice) -> str:
    labels = {o.option_id: o.label for o in prompt.options}
    answer = labels.get(choice.option_id or "") or choice.text or ""
    return f"Answered: {answer}"
