"""`/rawp resume` (issue 30 §2, docs/agents.md "Resume"): a session that ended goes on in the
same thread with the agent's own memory; the verb behind `ConversationHooks.resume`.

Rules:

1. The session is the thread's; typed in a channel (Slack's slash commands always are), the
   user's newest ended session there. It must have ended: an open session is written to, not
   resumed. Only its owner or a configured approver (gateway.sessions.mode_command rule 1) may
   resume it; the new session is the owner's, as the old one was.
2. The Edge API starts a new session on the same node with the same agent and workspace,
   naming the old one in `resume`; the client continues the agent's conversation (Claude Code
   `--resume`, ACP `session/load`) or refuses, and the refusal is the master's message.
3. The thread is bound to the new session and it goes live there, so the next message in the
   thread is a prompt to the resumed conversation; the thread is told so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.edge_client import EdgeApiError
from gateway.platform import Invocation
from gateway.sessions.chat_commands import NO_SESSION, refusal
from gateway.sessions.mode_command import may_change

if TYPE_CHECKING:
    from gateway.sessions.conversations import ConversationService
    from gateway.storage.conversation_store import Binding

STILL_OPEN = (
    "This session is still open: write in its thread to go on. Resume is for one that ended."
)
NOT_ALLOWED = "Only this session's owner or an approver can resume it."


async def resume(service: ConversationService, invocation: Invocation) -> str | None:
    binding = await _binding(service, invocation)
    if binding is None:
        return NO_SESSION
    if not binding.ended:
        return STILL_OPEN
    if not await may_change(service, invocation, binding):
        return NOT_ALLOWED  # rule 1
    try:
        created = await service.edge.create_session(
            binding.subject,
            binding.node_id,
            binding.agent_name,
            service.settings.workspace_path,
            resume=binding.session_id,
        )
    except EdgeApiError as exc:
        return refusal(exc)  # rule 2
    new_id = created.session_id
    await service.cluster.claim(new_id)  # a fresh id: nobody else holds it
    try:
        bound = await service.store.bind(
            binding.conversation,
            subject=binding.subject,
            session_id=new_id,
            node_id=binding.node_id,
            agent_name=binding.agent_name,
        )
        await service.go_live_once(bound, ticket=created.edge_ws_ticket)
    finally:
        if new_id not in service.live:  # a resume that failed holds nothing
            await service.cluster.release(new_id)
    said = (
        f"🔁 Resumed: session `{new_id}` goes on with the conversation of `{binding.session_id}`"
        f" ({binding.agent_name}). Every message in this thread is a prompt."
    )
    if binding.conversation != invocation.conversation:
        await service._platform.send_message(binding.conversation, said)  # rule 3
    return said


async def _binding(service: ConversationService, invocation: Invocation) -> Binding | None:
    binding = await service.settled_binding(invocation.conversation)
    if (binding is None or not binding.ended) and invocation.conversation.thread_id is None:
        subject = service.subject_of(invocation)
        newest = await service.store.latest_in_channel(invocation.conversation, subject, ended=True)
        binding = newest or binding
    return binding
