"""`/rawp fork` (issue 30 §2, docs/agents.md "Resume"): a copy of a session's conversation goes
on in a new thread, the original untouched; the verb behind `ConversationHooks.fork_session`.

Rules:

1. The session is the thread's, open or ended; typed in a channel (Slack's slash commands
   always are), the user's newest open session there, else their newest ended one. Only its
   owner may fork it: the copy is a new session of the caller's, and the master lets a user
   resume only their own sessions (master.edge.sessions.sessions rule 5).
2. The new session is started like `/rawp start` in the session's channel (a new thread, its
   greeting there) on the same node with the same agent, with `resume` naming the original and
   `fork` set: the agent continues a copy under a new id (Claude Code `--fork-session`). An
   agent that cannot fork is refused with the machine's message.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from gateway.platform import ConversationRef, Invocation
from gateway.sessions.chat_commands import NO_SESSION

if TYPE_CHECKING:
    from gateway.sessions.conversations import ConversationService
    from gateway.storage.conversation_store import Binding

NOT_OWNER = "Only this session's owner can fork it."


async def fork(service: ConversationService, invocation: Invocation) -> str | None:
    from gateway.sessions.conversations import StartRefused  # the service's own module

    binding = await _binding(service, invocation)
    if binding is None:
        return NO_SESSION
    if binding.subject != service.subject_of(invocation):
        return NOT_OWNER  # rule 1
    where = binding.conversation
    channel = replace(invocation, conversation=ConversationRef(where.platform, where.channel_id))
    try:
        _, greeting = await service.open_session(
            channel, binding.node_id, binding.agent_name, fork_of=binding.session_id
        )
    except StartRefused as refused:
        return refused.text  # rule 2
    return f"🍴 Forked `{binding.session_id}` into a new thread. {greeting}"


async def _binding(service: ConversationService, invocation: Invocation) -> Binding | None:
    binding = await service.settled_binding(invocation.conversation)
    if binding is None and invocation.conversation.thread_id is None:
        subject = service.subject_of(invocation)
        store, where = service.store, invocation.conversation
        newest = await store.latest_in_channel(where, subject)
        binding = newest or await store.latest_in_channel(where, subject, ended=True)
    return binding
