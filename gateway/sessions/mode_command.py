"""`/rawp mode [plan|ask|accept-edits]` (issue 30 §1): the verb behind `ChatCommands.set_mode`.

Rules:

1. Only the session's owner, or a configured approver (`approver_ids`, the platform's approver
   roles or groups), changes its mode; anyone else is told so and nothing is sent.
2. A name other than the three is refused with the three named; no name shows the mode the
   thread knows (the store's `session_modes`).
3. The mode is sent as `control.mode.set` with the Claude Code id of the name
   (gateway.rendering.render_core); the agent's answer shows in the thread — "Mode: plan" once its
   `session.capabilities` say so, or its refusal (`session.error`) as any refusal is shown.
   The reply to the user says the mode was asked for, not that it is set.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from gateway.edge_client import EdgeApiError
from gateway.platform import Invocation
from gateway.rendering.render_core import CHAT_MODES
from gateway.sessions.chat_commands import NO_SESSION, SESSION_ENDED, refusal

if TYPE_CHECKING:
    from gateway.sessions.conversations import ConversationService
    from gateway.storage.conversation_store import Binding

log = logging.getLogger(__name__)
NAMES = " | ".join(f"`{name}`" for name in CHAT_MODES)
NOT_ALLOWED = "Only this session's owner or an approver can change its mode."


async def changeable(
    service: ConversationService, invocation: Invocation, what: str = "mode"
) -> Binding | str:
    """The invocation's open session if the invoker may change its `what` (rule 1); else the
    answer to give (the model command asks the same)."""
    binding = await service.settled_binding(invocation.conversation)
    if (binding is None or binding.ended) and invocation.conversation.thread_id is None:
        # Typed in the channel: the user's newest open session under it (conversations rule 6).
        subject = service.subject_of(invocation)
        newest = await service.store.latest_in_channel(invocation.conversation, subject)
        binding = newest or binding
    if binding is None:
        return NO_SESSION
    if binding.ended:
        return SESSION_ENDED
    if not await may_change(service, invocation, binding):
        return NOT_ALLOWED.replace("mode", what)  # rule 1
    return binding


async def set_mode(service: ConversationService, invocation: Invocation, mode: str | None) -> str:
    binding = await changeable(service, invocation)
    if isinstance(binding, str):
        return binding
    if not mode or not mode.strip():  # rule 2
        known = await service.store.session_mode(binding.session_id)
        shown = f"`{known}`" if known else "the agent's own (never chosen here)"
        return f"Mode: {shown}. Choose one with the mode command: {NAMES}."
    name = mode.strip().casefold()
    if name not in CHAT_MODES:
        return f"❌ The mode is one of {NAMES}, not “{mode.strip()}”."
    try:
        live = await service._revive(binding)
        await live.set_mode(CHAT_MODES[name])  # rule 3
    except EdgeApiError as exc:
        return refusal(exc)
    except ConnectionError:
        return SESSION_ENDED
    return f"Asked the agent for mode `{name}`; the thread shows it once the agent has switched."


async def may_change(
    service: ConversationService, invocation: Invocation, binding: Binding
) -> bool:
    """Rule 1: the session's owner or an approver (the worktree command asks the same)."""
    if binding.subject == service.subject_of(invocation):
        return True
    allowed = service.settings.render.for_node(binding.node_id).approver_ids
    if invocation.user_id in allowed:
        return True
    platform = service.platform
    if platform is None:
        return False
    try:
        approvers = await platform.approvers(invocation.conversation)
    except Exception:  # a lookup that failed allows no one more (as for approvals)
        log.warning("could not read the approvers of %s", invocation.conversation, exc_info=True)
        return False
    return invocation.user_id in approvers
