"""Start where people talk: a mention or a direct message opens a session (issue 16 §1).

`Starter.start_here(invocation, request)` is what an adapter calls for a message addressed to
the bot outside a session thread — a mention at the top of a channel, a direct message — with
the message as a prompt (the mention taken out, attachments kept). Rules:

1. A conversation that already has an open session (a Discord DM after its first message, a
   Slack DM thread) gets `request` as a prompt, exactly as a thread message would.
2. Otherwise a session opens *on the message* (`ChatPlatform.open_thread_on`): Discord opens a
   thread on it, Slack answers in its thread (thread_ts = its ts), a Discord DM — which has no
   threads — is the session itself. `request` is the session's first prompt, and ⏳/✅ land on
   the user's message. A message that only chose the machine (`on laptop`) starts the session
   and sends nothing.
3. Which machine and agent (`choose`, plain data in, a choice or a question out):
   a. the message begins `on <machine> [agent]`: the machine named exactly (id or device name,
      any case, a trailing `,` or `:` ignored) among the user's own; the next word is the agent
      when it is one of the configured agents (RAWP_GATEWAY_AGENTS). Those words leave the
      prompt. A message that begins `on` and names none of the user's machines is plain text;
   b. else the user's default: the machine of their last successful start (any start: the
      start command too), remembered per master subject in the conversation store, while the
      machine is still theirs; else their only machine;
   c. the agent, when the message named none: the one of the last start, else the only
      configured agent.
   Whatever is still open is asked in one line that names the user's machines (or the
   agents); nothing is started.
   A word `--worktree` anywhere in a starting message asks for the session's own git worktree
   (issue 30 §3, docs/worktrees.md) and leaves the prompt.
4. Two messages racing into one conversation without a session start one session: a user's
   starts are taken one at a time per conversation, and the later message becomes a prompt of
   the first's session (rule 1). Different users' mentions in one channel do not wait for each
   other (each opens its own thread).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gateway.edge_client import EdgeApiError
from gateway.platform import ConversationRef, Invocation
from gateway.sessions.chat_commands import refusal
from gateway.sessions.conversations import StartRefused
from rawp.events import PromptRequest
from rawp.fileref import unescape
from rawp.rest import NodeInfo

if TYPE_CHECKING:
    from gateway.sessions.conversations import ConversationService

NO_MACHINES = "You have no machines yet. Pair one with the pair command."
_WORD = re.compile(r"\s*(\S+)")
_WORKTREE_FLAG = re.compile(r"(?:^|\s)--worktree(?=\s|$)")


@dataclass(frozen=True)
class Target:
    """Where a start goes, and what is left of the prompt once the choice words are out."""

    node: NodeInfo
    agent: str
    prompt_text: str


def _take_word(text: str) -> tuple[str, str] | None:
    """The first word of `text` and what follows it (its leading space kept)."""
    match = _WORD.match(text)
    return (match.group(1), text[match.end() :]) if match else None


def take_worktree_flag(text: str) -> tuple[str, bool]:
    """Rule 3: the text without its `--worktree` words, and whether there was one."""
    rest, found = _WORKTREE_FLAG.subn("", text)
    return (rest.lstrip() if found else text), bool(found)


def _named(nodes: Sequence[NodeInfo], word: str) -> NodeInfo | None:
    wanted = word.rstrip(",:").casefold()
    for found in (
        [n for n in nodes if n.node_id.casefold() == wanted],
        [n for n in nodes if n.device_name.casefold() == wanted],
    ):
        if len(found) == 1:
            return found[0]
    return None


def _device(node: NodeInfo) -> str:
    return node.device_name or node.node_id


def inline_choice(
    text: str, nodes: Sequence[NodeInfo], agents: Sequence[str]
) -> tuple[NodeInfo | None, str | None, str]:
    """Rule 3a: (machine, agent, the rest of the prompt) from `on <machine> [agent] …`.

    `text` is a composed prompt (rawp.fileref escaping): words are compared unescaped, and the
    rest is cut at a space, so its escaping stays whole.
    """
    first = _take_word(text)
    if first is None or first[0].casefold() != "on":
        return None, None, text
    second = _take_word(first[1])
    node = _named(nodes, unescape(second[0])) if second else None
    if node is None or second is None:
        return None, None, text
    rest = second[1]
    third = _take_word(rest)
    agent = None
    if third is not None and unescape(third[0]).rstrip(",:") in agents:
        agent, rest = unescape(third[0]).rstrip(",:"), third[1]
    return node, agent, rest.lstrip()


def choose(
    text: str,
    nodes: Sequence[NodeInfo],
    agents: Sequence[str],
    remembered: tuple[str, str] | None,
) -> Target | str:
    """Rule 3: the machine and agent to start on, or the one-line question to ask."""
    if not nodes:
        return NO_MACHINES
    node, agent, rest = inline_choice(text, nodes, agents)
    if node is None and remembered is not None:
        node = next((n for n in nodes if n.node_id == remembered[0]), None)
    if node is None and len(nodes) == 1:
        node = nodes[0]
    if node is None:
        names = ", ".join(_device(n) for n in nodes)
        return (
            f"Which machine? Begin your message with `on <machine> [agent]` (yours: {names}), "
            "or use the start command."
        )
    if agent is None and remembered is not None:
        agent = remembered[1]
    if agent is None and len(agents) == 1:
        agent = agents[0]
    if agent is None:
        offered = ", ".join(agents) or "none configured"
        return (
            f"Which agent? Begin your message with `on {_device(node)} <agent>` "
            f"(agents: {offered}), or use the start command."
        )
    return Target(node, agent, rest)


class Starter:
    """Rule 1–4 for one `ConversationService` (its store, Edge API client and platform)."""

    def __init__(self, service: ConversationService) -> None:
        self.service = service
        # (conversation, user) → [its lock, how many starts hold or wait for it] (rule 4); an
        # entry lives only while a start is under way, so the table stays as small as the traffic.
        self._turns: dict[tuple[ConversationRef, str], list] = {}

    async def start_here(self, invocation: Invocation, request: PromptRequest) -> str | None:
        where = (invocation.conversation, invocation.user_id)
        entry = self._turns.setdefault(where, [asyncio.Lock(), 0])
        entry[1] += 1
        try:
            async with entry[0]:
                return await self._start_here(invocation, request)
        finally:
            entry[1] -= 1
            if not entry[1]:
                del self._turns[where]

    async def _start_here(self, invocation: Invocation, request: PromptRequest) -> str | None:
        service = self.service
        bound = await service.settled_binding(invocation.conversation)
        if bound is not None and not bound.ended:
            return await service.prompt(invocation, request)  # rule 1
        subject = service.subject_of(invocation)
        try:
            nodes = await service.edge.list_nodes(subject)
        except EdgeApiError as exc:
            return refusal(exc)
        remembered = await service.store.last_start(subject)
        text, worktree = take_worktree_flag(request.prompt_text)
        target = choose(text, nodes, service.settings.agents, remembered)
        if isinstance(target, str):
            return target
        try:
            live, greeting = await service.open_session(
                invocation, target.node.node_id, target.agent, on_message=True, worktree=worktree
            )
        except StartRefused as refused:
            return refused.text
        conversation, platform = live.renderer.conversation, service.platform
        if conversation == invocation.conversation and platform is not None:
            # A DM, or a thread already there: open_session greeted nobody yet.
            await platform.send_message(conversation, greeting + " Every message here is a prompt.")
        prompt = request.model_copy(update={"prompt_text": target.prompt_text})
        if not prompt.prompt_text.strip() and not prompt.attachments:
            return None  # rule 2: only the machine was chosen
        try:
            await live.chat.send_prompt(
                prompt, message=invocation.message, user_id=invocation.user_id
            )
        except ConnectionError:
            return "⚠️ The session ended before your message reached it."
        return None
