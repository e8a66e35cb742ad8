"""The approval flow: `agent.interaction.request` → buttons → `control.interaction.response`.

Rules (issue 10 "Approvals", A-41; issue 15 §4):

1. Each request becomes one platform prompt with a button per option; it is answered at most
   once, with `parent_id` = the request's `message_id` (dps-profile §1, §6).
2. Only the user who started the turn, or a configured approver (`approver_ids`, and the
   platform's approver roles or groups read when the prompt opens), may answer; anyone else
   gets an ephemeral refusal and the prompt stays open. With neither known, anyone may answer.
3. A click that names no offered option is refused the same way (a stale or forged button).
4. If the agent named a `timeout_s` and it passes with no answer, the gateway sends nothing:
   the agent asked with that timeout and applies its own default; the prompt is closed with
   that outcome.
5. If the agent named no timeout, the gateway applies its own (`default_timeout_s`, a gateway
   setting, 10 minutes unless configured): at expiry it answers with the request's deny
   option (`reject_once`, else `reject_always`, else one called deny/reject/no) and the chat
   says so ("⏱ No answer in 10 min — denied"). A request with no deny option is closed
   without an answer. A platform that can deliver no more answers (the console's input
   ended) ends the wait early, and the request is denied the same way.
6. Every answer, every refused press and every expiry is reported to the master's audit log
   (gateway.approvals.audit) with who, which option, and the tool the request is about (the turn's
   `tool.invoke.request` with the request's `invocation_id`), after the chat was answered.
7. When the turn ends, prompts still open are closed ("the turn ended") and never answered.
8. A prompt is posted once per request across gateway restarts (gateway.rendering.posting); one
   posted before a restart is not waited for again here: a click on it reaches the session as a
   stale choice (gateway.sessions.conversations rule 4). Each wait is a task of the renderer's
   `TaskOwner`, so a failure is logged there and none outlives the renderer.
9. A prompt answered in another edge of the session (the web edge, a second chat) is closed
   here ("Answered elsewhere"), and never answered or expired by this gateway. RAWP has no
   "answered" frame, so what tells is the agent going on: a `tool.invoke.result` for the
   prompt's `invocation_id`, or, for a prompt about no tool, the agent leaving
   `awaiting_input`. Once this flow has decided to answer (a press, an expiry), its prompt is
   no longer open, so its own answer never closes it as "elsewhere". The answer is audited by
   the edge that took it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from gateway.approvals.audit import ANSWERED, EXPIRED, REFUSED, ApprovalRecord, AuditSink, no_audit
from gateway.platform import (
    ChatPlatform,
    Choice,
    ChoiceOption,
    ConversationRef,
    InteractionPrompt,
    MessageRef,
)
from gateway.rendering.posting import Poster
from gateway.settings import DEFAULT_APPROVAL_TIMEOUT_S
from rawp.clock import SYSTEM_CLOCK, Clock
from rawp.events import InteractionRequest, InteractionResponse, ToolInvokeRequest
from rawp.frames import Frame, make_frame
from runtime.tasks import TaskOwner

log = logging.getLogger(__name__)

SendFrame = Callable[[Frame], Awaitable[None]]

TIMED_OUT = "⌛ No answer in time — the agent applies its default."
TURN_ENDED = "The turn ended before an answer."
ANSWERED_ELSEWHERE = "Answered elsewhere; the agent went on."
DEFAULT_TIMEOUT_S = (
    DEFAULT_APPROVAL_TIMEOUT_S  # rule 5: deny after 10 minutes unless told otherwise
)
DENY_WORDS = ("deny", "reject", "no", "decline")


@dataclass
class _Pending:
    turn_id: str | None
    message: MessageRef
    task: asyncio.Task[None]
    invocation_id: str | None = None  # the tool the prompt is about (rule 9)


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
        default_timeout_s: float = DEFAULT_TIMEOUT_S,
        audit: AuditSink = no_audit,
    ) -> None:
        self._platform = platform
        self._conversation = conversation
        self._session_id = session_id
        self._send_frame = send_frame
        self._poster = poster
        self._tasks = tasks
        self._approver_ids = approver_ids
        self._clock = clock
        self._default_timeout_s = default_timeout_s
        self._audit = audit
        self._pending: dict[str, _Pending] = {}

    async def open(
        self,
        frame: Frame,
        request: InteractionRequest,
        starter_id: str | None,
        tool: ToolInvokeRequest | None = None,
    ) -> None:
        """Show the request's buttons and start waiting for its answer (rule 1); `tool` is
        the request the approval is about, for the audit (rule 6)."""
        if request.interaction_id in self._pending:
            return  # the same request again (a replay): one prompt is enough
        allowed = self._approver_ids | await self._configured_approvers()
        allowed |= {starter_id} if starter_id else frozenset()
        prompt = InteractionPrompt(
            interaction_id=request.interaction_id,
            kind=request.kind,
            prompt=request.prompt,
            options=tuple(ChoiceOption(o.option_id, o.label, o.kind) for o in request.options),
            allowed_user_ids=frozenset(allowed),
        )
        message, posted_now = await self._poster.send_interaction(prompt)
        if not posted_now:
            return  # rule 8: posted before a restart
        task = self._tasks.spawn(
            self._await_answer(frame, request, prompt, message, tool),
            name=f"interaction {request.interaction_id}",
        )
        self._pending[request.interaction_id] = _Pending(
            frame.turn_id, message, task, request.invocation_id
        )

    async def _await_answer(
        self,
        frame: Frame,
        request: InteractionRequest,
        prompt: InteractionPrompt,
        ref: MessageRef,
        tool: ToolInvokeRequest | None,
    ) -> None:
        timeout = request.timeout_s or self._default_timeout_s  # rules 4 and 5
        deadline = self._clock.monotonic() + timeout

        def record(outcome: str, **fields) -> ApprovalRecord:
            return ApprovalRecord(
                outcome=outcome,
                interaction_id=request.interaction_id,
                platform=self._platform.name,
                tool=tool,
                **fields,
            )

        try:
            while True:
                remaining = deadline - self._clock.monotonic()
                choice = None
                if remaining > 0:
                    choice = await self._platform.wait_for_choice(ref, remaining)
                if choice is None:
                    self._pending.pop(request.interaction_id, None)  # rule 9: expired here
                    await self._expire(frame, request, prompt, ref, record, deadline)
                    return
                refusal = self._refusal(prompt, choice)
                if refusal:
                    await self._refuse(prompt, choice, refusal, record)
                    continue
                self._pending.pop(request.interaction_id, None)  # rule 9: answered here
                await self._answer(frame, request, choice.option_id, choice.text)
                await self._platform.close_interaction(ref, _outcome(prompt, choice))
                await self._audit(
                    record(
                        ANSWERED,
                        actor_id=choice.user_id,
                        option_id=choice.option_id,
                        option_label=_label(prompt, choice.option_id) or _typed(choice.text),
                    )
                )
                return
        except asyncio.CancelledError:
            raise
        except Exception:
            log.warning("interaction %s failed", request.interaction_id, exc_info=True)
        finally:
            self._pending.pop(request.interaction_id, None)

    async def _refuse(
        self,
        prompt: InteractionPrompt,
        choice: Choice,
        refusal: str,
        record: Callable[..., ApprovalRecord],
    ) -> None:
        """A press the presser may not make: told privately, and on record too (rule 6)."""
        await self._platform.send_ephemeral(self._conversation, choice.user_id, refusal)
        await self._audit(
            record(
                REFUSED,
                actor_id=choice.user_id,
                option_id=choice.option_id,
                option_label=_label(prompt, choice.option_id),
                detail=refusal,
            )
        )

    async def _expire(
        self,
        frame: Frame,
        request: InteractionRequest,
        prompt: InteractionPrompt,
        ref: MessageRef,
        record: Callable[..., ApprovalRecord],
        deadline: float,
    ) -> None:
        """No answer in time: the agent's default (rule 4) or the gateway's deny (rule 5)."""
        if request.timeout_s is not None:
            await self._platform.close_interaction(ref, TIMED_OUT)
            detail = f"no answer in {_duration(request.timeout_s)}: the agent's default applies"
            await self._audit(record(EXPIRED, detail=detail))
            return
        # The wait also ends early when no answer can come any more (the console's input
        # ended): that is denied the same way, without claiming the time ran out.
        ran_out = self._clock.monotonic() >= deadline
        waited = f" in {_duration(self._default_timeout_s)}" if ran_out else ""
        deny = deny_option(prompt)
        if deny is None:
            await self._platform.close_interaction(ref, f"⏱ No answer{waited} — closed.")
            await self._audit(record(EXPIRED, detail=f"no answer{waited}: closed"))
            return
        await self._answer(frame, request, deny.option_id, None)
        await self._platform.close_interaction(ref, f"⏱ No answer{waited} — denied.")
        await self._audit(
            record(
                EXPIRED,
                option_id=deny.option_id,
                option_label=deny.label,
                detail=f"no answer{waited}: denied by the gateway",
            )
        )

    async def _answer(
        self, frame: Frame, request: InteractionRequest, option_id: str | None, text: str | None
    ) -> None:
        await self._send_frame(
            make_frame(
                "control.interaction.response",
                InteractionResponse(
                    interaction_id=request.interaction_id, option_id=option_id, text=text
                ),
                session_id=self._session_id,
                turn_id=frame.turn_id,
                parent_id=frame.message_id,
            )
        )

    async def _configured_approvers(self) -> frozenset[str]:
        """Rule 2's approvers as the platform knows them now (roles, user groups)."""
        try:
            return await self._platform.approvers(self._conversation)
        except Exception:  # a lookup that failed allows no one more: the starter still may
            log.warning("could not read the approvers of %s", self._conversation, exc_info=True)
            return frozenset()

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
        """Close what a finished turn left open (rule 7)."""
        for interaction_id, pending in list(self._pending.items()):
            if pending.turn_id == turn_id:
                await self._close(interaction_id, pending)

    async def close_all(self) -> None:
        for interaction_id, pending in list(self._pending.items()):
            await self._close(interaction_id, pending)

    async def went_on(
        self, *, invocation_id: str | None = None, left_awaiting_input: bool = False
    ) -> None:
        """Rule 9: the agent went on, so the prompts it was waiting on were answered elsewhere:
        those about `invocation_id`, or, when it left `awaiting_input`, those about no tool."""
        for interaction_id, pending in list(self._pending.items()):
            about_it = invocation_id is not None and pending.invocation_id == invocation_id
            if about_it or (left_awaiting_input and pending.invocation_id is None):
                await self._close(interaction_id, pending, ANSWERED_ELSEWHERE)

    async def _close(self, interaction_id: str, pending: _Pending, outcome: str = TURN_ENDED):
        self._pending.pop(interaction_id, None)
        if pending.task is not asyncio.current_task():
            # Cancelled and awaited: no answer is sent after this. `asyncio.wait` does not
            # raise the child's CancelledError into this (uncancelled) task.
            pending.task.cancel()
            await asyncio.wait({pending.task})
        try:
            await self._platform.close_interaction(pending.message, outcome)
        except Exception:
            log.warning("could not close interaction %s", interaction_id, exc_info=True)


def _outcome(prompt: InteractionPrompt, choice: Choice) -> str:
    labels = {o.option_id: o.label for o in prompt.options}
    answer = labels.get(choice.option_id or "") or choice.text or ""
    return f"Answered: {answer}"


def deny_option(prompt: InteractionPrompt) -> ChoiceOption | None:
    """Rule 5: the option that says no, by its kind first, then by its id or label."""
    for kind in ("reject_once", "reject_always"):
        for option in prompt.options:
            if option.kind == kind:
                return option
    for option in prompt.options:
        if option.option_id.casefold() in DENY_WORDS or option.label.casefold() in DENY_WORDS:
            return option
    return None


def _label(prompt: InteractionPrompt, option_id: str | None) -> str | None:
    return next((o.label for o in prompt.options if o.option_id == option_id), None)


def _typed(text: str | None) -> str | None:
    """An `input` answer is recorded as having been typed, not what was typed (it may be a
    secret someone was asked for)."""
    return None if text is None else "(typed an answer)"


def _duration(seconds: float) -> str:
    if seconds >= 60 and seconds % 60 == 0:
        return f"{int(seconds // 60)} min"
    return f"{seconds:g} s"
