"""The chat commands of the conversation layer: what each verb a user types answers.

`ChatCommands` is the half of `ConversationService` (gateway.sessions.conversations) that acts on
a conversation's session once it exists: prompt, stop, end, busy, pair, web, nodes, sessions,
usage, the autocomplete lists and a button pressed before a restart. The other half — starting,
going live, resuming, finding a conversation's session — stays in gateway.sessions.conversations,
whose rules the numbers below cite. Every answer is text for the user (rule 7).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.approvals.audit import ANSWERED, REFUSED, ApprovalRecord, EdgeAuditSink
from gateway.edge_client import EdgeApiError, EdgeClient
from gateway.platform import Invocation, StaleChoice, Suggestion
from gateway.redaction.redact import Redactor
from gateway.rendering.usage import usage_text
from gateway.sessions import busy
from gateway.storage.web_logins import WebLinks, web_link_text
from rawp.events import Command, FileCandidate, PromptRequest
from rawp.rest import NodeInfo

if TYPE_CHECKING:
    from gateway.replicas.cluster import LocalCluster
    from gateway.sessions.conversations import ConversationSettings
    from gateway.sessions.live import ConnectedSession
    from gateway.storage.conversation_store import Binding, ConversationStore

NO_SESSION = "No session in this conversation yet. Start one with the start command."
SESSION_ENDED = "This session has ended. Start a new one with the start command."
NOT_YOURS = "This session belongs to someone else; start your own with the start command."
FRIENDLY = {
    "MASTER_UNREACHABLE": "The master cannot be reached right now; try again in a moment.",
    "CONFIG_NOT_SYNCED": "That machine is still connecting to the master; try again shortly.",
    "NODE_NOT_FOUND": "No such machine on your account. List yours with the nodes command.",
    "SESSION_NOT_FOUND": SESSION_ENDED,
}


def _device(node: NodeInfo) -> str:
    return node.device_name or node.node_id


def refusal(exc: EdgeApiError) -> str:
    friendly = FRIENDLY.get(exc.error_code)
    return f"❌ {friendly or exc.message} ({exc.error_code})"


class ChatCommands:
    """The verbs of `ConversationService`, on the state its other half keeps and through its
    lookups: `subject_of`, `_binding` and `live_session` (gateway.sessions.conversations)."""

    edge: EdgeClient
    store: ConversationStore
    settings: ConversationSettings
    live: dict[str, ConnectedSession]
    web_links: WebLinks | None
    cluster: LocalCluster

    async def prompt(
        self, invocation: Invocation, request: PromptRequest, prompt_id: str | None = None
    ) -> str | None:
        """`prompt_id`: the frame's message_id, chosen by the replica the message reached, so
        a retry through another replica is dropped by the master as a repeat (rule 10)."""
        live = await self.live_session(invocation)
        if isinstance(live, str):
            return live
        try:
            await busy.send_prompt(
                self.store, live, request, invocation.message, invocation.user_id, prompt_id
            )
        except ConnectionError:
            return SESSION_ENDED
        return None  # the turn answers in the conversation itself

    async def stop(self, invocation: Invocation) -> str | None:
        live = await self.live_session(invocation)
        if isinstance(live, str):
            return live
        turn = live.renderer.turn
        if turn is None:
            return "Nothing is running."
        try:
            await live.chat.cancel(turn.turn_id)
        except ConnectionError:
            return SESSION_ENDED
        return "⏹ Stopping the turn."

    async def end(self, invocation: Invocation) -> str | None:
        binding = await self._binding(invocation)
        if isinstance(binding, str):
            return binding
        return await self.end_binding(binding)

    async def end_binding(self, binding: Binding) -> str | None:
        """End the session `binding` names: its rendering here, then on the master."""
        live = self.live.pop(binding.session_id, None)
        if live is not None:
            await live.close()
            await live.renderer.queue.clear()  # what waited will not run (gateway.sessions.busy)
        try:
            await self.edge.end_session(binding.subject, binding.session_id)
        except EdgeApiError as exc:
            if exc.status not in (403, 404):  # already gone: ending it is done all the same
                return refusal(exc)
        await self.store.mark_ended(binding.session_id)
        await self.cluster.release(binding.session_id)
        return f"Session `{binding.session_id}` ended."

    async def schedule(self, invocation: Invocation, text: str | None) -> str | None:
        """Scheduled prompts (issue 30 §5): the master keeps them (schedule_command, which
        reads this module's `refusal`: imported here, not at the top, to keep one direction)."""
        from gateway.sessions import schedule_command

        return await schedule_command.schedule(self, invocation, text)

    async def set_busy(self, invocation: Invocation, mode: str | None) -> str | None:
        return await busy.set_busy_mode(self.store, invocation.conversation, mode)

    async def pair(self, invocation: Invocation) -> str | None:
        try:
            answer = await self.edge.pairing_url(self.subject_of(invocation))
        except EdgeApiError as exc:
            return refusal(exc)
        minutes = max(1, answer.expires_in // 60)
        return (
            "On the machine you want to use, run:\n"
            f"rawp client pair '{answer.pairing_url}'\n"
            f"then `rawp client`. The URL works once, for {minutes} minutes."
        )

    async def web_link(self, invocation: Invocation) -> str | None:
        return await web_link_text(self.web_links, self.subject_of(invocation))

    async def list_nodes(self, invocation: Invocation) -> str | None:
        try:
            nodes = await self.edge.list_nodes(self.subject_of(invocation))
        except EdgeApiError as exc:
            return refusal(exc)
        if not nodes:
            return "You have no machines yet. Pair one with the pair command."
        lines = ["Your machines:"]
        for n in nodes:
            count = n.active_sessions_count
            lines.append(
                f"• {n.device_name or '?'} (`{n.node_id}`) — {n.status}"
                + (f", {count} session{'s' if count != 1 else ''}" if count else "")
            )
        return "\n".join(lines)

    async def list_sessions(self, invocation: Invocation) -> str | None:
        try:
            sessions = await self.edge.list_sessions(self.subject_of(invocation))
            names = {
                n.node_id: n.device_name
                for n in await self.edge.list_nodes(self.subject_of(invocation))
            }
        except EdgeApiError as exc:
            return refusal(exc)
        if not sessions:
            return "You have no open sessions."
        lines = ["Your sessions:"]
        for s in sessions:
            device = names.get(s.node_id) or s.node_id
            lines.append(f"• `{s.session_id}` — {s.agent_name} on {device}, {s.status}")
        return "\n".join(lines)

    # --- autocomplete ------------------------------------------------------------------------

    async def suggest_nodes(self, invocation: Invocation, typed: str) -> list[Suggestion]:
        try:
            nodes = await self.edge.list_nodes(self.subject_of(invocation))
        except EdgeApiError:
            return []
        text = typed.casefold()
        return [
            Suggestion(f"{_device(n)} ({n.status})", n.node_id)
            for n in nodes
            if text in n.device_name.casefold() or text in n.node_id.casefold()
        ]

    async def suggest_agents(
        self, invocation: Invocation, node: str | None, typed: str
    ) -> list[Suggestion]:
        text = typed.casefold()
        names = [a for a in self.settings.agents if text in a.casefold()]
        if typed and typed not in names:
            names.append(typed)  # any agent the node's agents file names may be typed
        return [Suggestion(a, a) for a in names]

    async def suggest_terminal(self, invocation: Invocation, typed: str) -> list[Suggestion]:
        """Terminal conversations the resume command can pick (gateway.sessions.resume_command,
        imported here, not at the top, to keep one direction)."""
        from gateway.sessions import resume_command

        return await resume_command.suggest(self, invocation, typed)  # type: ignore[arg-type]

    async def search_files(self, invocation: Invocation, typed: str) -> list[FileCandidate]:
        live = await self.live_session(invocation)
        if isinstance(live, str):
            return []
        return await live.search_files(typed)

    async def agent_commands(self, invocation: Invocation) -> list[Command]:
        live = await self.live_session(invocation)
        if isinstance(live, str):
            return []
        return live.renderer.commands.listing()

    async def usage(self, invocation: Invocation) -> str | None:
        """The master's figures for the user and this conversation's session
        (gateway.rendering.usage)."""
        subject = self.subject_of(invocation)
        binding = await self.store.get(invocation.conversation)
        if binding is None and invocation.conversation.thread_id is None:  # rule 6
            binding = await self.store.latest_in_channel(invocation.conversation, subject)
        mine = binding is not None and binding.subject == subject
        try:
            report = await self.edge.usage(subject, binding.session_id if mine else None)
        except EdgeApiError as exc:
            return refusal(exc)
        return usage_text(report)

    async def stale_choice(self, stale: StaleChoice) -> str | None:
        """A button from before a restart (rule 4): answered through the session if it is
        still open and the clicker is its owner; the agent ignores an answer it no longer
        waits for."""
        live = await self.live_session(stale.invocation)
        if live == NOT_YOURS:  # rule 9: a stranger's press is on record, as before a restart
            binding = await self.store.get(stale.invocation.conversation)
            if binding is not None:
                redact = (
                    Redactor().redact
                    if self.settings.render.for_node(binding.node_id).redact
                    else str
                )
                sink = EdgeAuditSink(self.edge, binding.subject, binding.session_id, redact=redact)
                await sink(_stale_record(stale, REFUSED, NOT_YOURS))
        if isinstance(live, str):
            return live
        try:
            await live.answer_stale(stale.interaction_id, stale.choice)
        except ConnectionError:
            return SESSION_ENDED
        await live.renderer.audit(_stale_record(stale, ANSWERED, STALE_ANSWER))  # rule 9
        return None


STALE_ANSWER = "answered on a prompt posted before a gateway restart"


def _stale_record(stale: StaleChoice, outcome: str, detail: str) -> ApprovalRecord:
    return ApprovalRecord(
        outcome,
        stale.interaction_id,
        stale.invocation.conversation.platform,
        actor_id=stale.choice.user_id,
        option_id=stale.choice.option_id,
        detail=detail,
    )
