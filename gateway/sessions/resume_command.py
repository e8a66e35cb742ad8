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
4. Terminal sessions (docs/agents.md "Resume"): with no session to resume here, or with
   `list`, the answer lists the agents' own conversations on the caller's machines that RAWP
   did not start (`GET /v1/edge/nodes/{id}/agent-sessions`, each of the caller's machines that
   is not offline), newest first, numbered, with the first 8 characters of each id; at most
   `LISTED` of them. Only the caller's own machines are asked (gateway.sessions.conversations
   rule 1): nobody sees or picks up a conversation on a machine that is not theirs. Titles
   are redacted like the session's output where the node's output is.
5. `resume <pick>` picks one: its number in that listing, a prefix (4+ characters) of its id, or
   `<node id>:<conversation id>` (what Discord's autocomplete sends). The listing is read
   again and the pick must be in it; the session starts like `/rawp start` in the channel (a
   new thread, its greeting there) on that machine with that agent, with
   `resume_conversation`: the agent continues that conversation where it ran.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from gateway.edge_client import EdgeApiError
from gateway.platform import ConversationRef, Invocation, Suggestion
from gateway.redaction.redact import Redactor
from gateway.sessions.chat_commands import refusal
from gateway.sessions.mode_command import may_change

if TYPE_CHECKING:
    from gateway.sessions.conversations import ConversationService
    from gateway.storage.conversation_store import Binding

STILL_OPEN = (
    "This session is still open: write in its thread to go on. Resume is for one that ended."
)
NOT_ALLOWED = "Only this session's owner or an approver can resume it."
LISTED = 10  # conversations in one answer: a Discord message holds 2,000 characters
TITLE_SHOWN = 60
NONE_FOUND = (
    "No session in this conversation, and no conversation from the terminal on your machines "
    "to pick up."
)
LIST_WORD = "list"


async def resume(
    service: ConversationService, invocation: Invocation, pick: str | None = None
) -> str | None:
    pick = (pick or "").strip()
    if pick.casefold() == LIST_WORD:
        return await _listing(service, invocation)  # rule 4
    if pick:
        return await _pick(service, invocation, pick)  # rule 5
    binding = await _binding(service, invocation)
    if binding is None:
        return await _listing(service, invocation)  # rule 4
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


# --- terminal sessions (rules 4 and 5) ----------------------------------------------------


@dataclass(frozen=True)
class Found:
    """One conversation of an agent's own, on one of the caller's machines."""

    node_id: str
    device: str
    agent: str
    conversation_id: str
    title: str
    updated_at: str

    @property
    def short(self) -> str:
        return self.conversation_id[:8]


async def terminal_conversations(service: ConversationService, invocation: Invocation) -> list:
    """Rule 4: the caller's machines' conversations, newest first; a machine that cannot
    answer is left out rather than failing the listing."""
    subject = service.subject_of(invocation)
    nodes = [n for n in await service.edge.list_nodes(subject) if n.status != "offline"]
    answers = await asyncio.gather(
        *(service.edge.agent_sessions(subject, n.node_id) for n in nodes), return_exceptions=True
    )
    redact = Redactor().redact  # a title is the user's own prompt: secrets are cut like output
    found = [
        Found(node.node_id, node.device_name or node.node_id, c.agent_name, c.conversation_id,
              redact(c.title) if service.settings.render.for_node(node.node_id).redact
              else c.title, c.updated_at)
        for node, answer in zip(nodes, answers, strict=True)
        if not isinstance(answer, BaseException)
        for c in answer
    ]  # fmt: skip
    found.sort(key=lambda f: f.updated_at, reverse=True)
    return found


def _age(updated_at: str) -> str:
    try:
        seconds = (datetime.now(UTC) - datetime.fromisoformat(updated_at)).total_seconds()
    except ValueError:
        return "?"
    for size, unit in ((86_400, "d"), (3_600, "h"), (60, "min")):
        if seconds >= size:
            return f"{int(seconds // size)} {unit} ago"
    return "just now"


def _title(found: Found) -> str:
    text = found.title.replace("`", "'")
    return text if len(text) <= TITLE_SHOWN else text[: TITLE_SHOWN - 1] + "…"


async def _listing(service: ConversationService, invocation: Invocation) -> str:
    try:
        found = await terminal_conversations(service, invocation)
    except EdgeApiError as exc:
        return refusal(exc)
    if not found:
        return NONE_FOUND
    lines = ["No session to resume here. Conversations from the terminal you can pick up:"]
    for number, one in enumerate(found[:LISTED], 1):
        lines.append(
            f"{number}. `{one.short}` {_title(one)} — {one.agent} on {one.device}, "
            f"{_age(one.updated_at)}"
        )
    lines.append("Pick one with the resume command and its number or id.")
    return "\n".join(lines)


def _chosen(found: list[Found], pick: str) -> Found | str:
    """Rule 5: the conversation `pick` names in the listing, or why none."""
    if ":" in pick:
        node, _, conversation = pick.partition(":")
        hits = [f for f in found if (f.node_id, f.conversation_id) == (node, conversation)]
    elif pick.isdigit():
        number = int(pick)
        hits = [found[number - 1]] if 0 < number <= min(len(found), LISTED) else []
    elif len(pick) >= 4 and re.fullmatch(r"[A-Za-z0-9_-]+", pick):
        hits = [f for f in found if f.conversation_id.startswith(pick)]
    else:
        hits = []
    if len(hits) == 1:
        return hits[0]
    if hits:
        return f"“{pick}” matches several conversations; give more of the id."
    return (
        f"No conversation “{pick}” from the terminal on your machines. "
        "List them with the resume command and `list`."
    )


async def _pick(service: ConversationService, invocation: Invocation, pick: str) -> str | None:
    from gateway.sessions.conversations import StartRefused  # the service's own module

    try:
        chosen = _chosen(await terminal_conversations(service, invocation), pick)
    except EdgeApiError as exc:
        return refusal(exc)
    if isinstance(chosen, str):
        return chosen
    where = invocation.conversation
    channel = replace(invocation, conversation=ConversationRef(where.platform, where.channel_id))
    try:
        _, greeting = await service.open_session(
            channel, chosen.node_id, chosen.agent, resume_conversation=chosen.conversation_id
        )
    except StartRefused as refused:
        return refused.text
    return (
        f"🔁 Picked up `{chosen.short}` ({_title(chosen)}) from the terminal in a new thread. "
        f"{greeting}"
    )


async def suggest(service: ConversationService, invocation: Invocation, typed: str) -> list:
    """Discord's autocomplete of the resume command's `session` (rule 5's `node:id` form)."""
    try:
        found = await terminal_conversations(service, invocation)
    except EdgeApiError:
        return []
    text = typed.casefold()
    return [
        Suggestion(
            f"{_title(f)} — {f.agent} on {f.device}, {_age(f.updated_at)}",
            f"{f.node_id}:{f.conversation_id}",
        )
        for f in found
        if text in f.title.casefold() or f.conversation_id.startswith(typed)
    ]
