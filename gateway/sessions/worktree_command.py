"""`/rawp worktree diff|merge|discard` (issue 30 §3, docs/worktrees.md): ending a session's git
worktree from chat; the verb behind `ConversationHooks.worktree`.

Rules:

1. The session is the thread's, ended or not (a worktree outlives its session); typed in a
   channel (Slack's slash commands always are), the user's newest open session there, else
   their newest ended one. Only its owner or a configured approver
   (gateway.sessions.mode_command rule 1) may act; anyone else is told so and nothing is sent.
   The Edge API call is made as the session's owner, the only user the master lets act on it.
2. `merge` and `discard` end a session still open first, as the end command does, so the
   thread says it ended and no agent writes into a worktree being merged or removed.
3. `diff` is posted into the conversation: in a code block when it fits one message, else as a
   `.diff` file when the platform takes files of that size, else cut to one message and said so.
   An empty diff says there are no changes. The caller's own answer says where it went.
4. A refusal (not a repository, a merge conflict, no worktree) is the master's message.
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

ACTIONS = ("diff", "merge", "discard")
USAGE = "❌ Use the worktree command with `diff`, `merge` or `discard`."
NOT_ALLOWED = "Only this session's owner or an approver can diff, merge or discard its worktree."
FENCE = "```"


async def worktree(
    service: ConversationService, invocation: Invocation, action: str | None
) -> str | None:
    name = (action or "").strip().casefold()
    if name not in ACTIONS:
        return USAGE
    binding = await _binding(service, invocation)
    if binding is None:
        return NO_SESSION
    if not await may_change(service, invocation, binding):
        return NOT_ALLOWED  # rule 1
    if name != "diff" and not binding.ended:  # rule 2
        ended = await service.end_binding(binding)
        if ended is not None and ended.startswith("❌"):
            return ended
    try:
        answer = await service.edge.session_worktree(binding.subject, binding.session_id, name)
    except EdgeApiError as exc:
        return refusal(exc)  # rule 4
    if name == "merge":
        return (
            f"✅ Merged `{answer.get('branch')}` into `{answer.get('into')}`; the worktree and "
            "its branch are removed and the session has ended."
        )
    if name == "discard":
        branch = answer.get("branch")
        return f"🗑 Discarded the worktree and branch `{branch}`; the session has ended."
    return await _post_diff(service, invocation, binding, answer)


async def _binding(service: ConversationService, invocation: Invocation) -> Binding | None:
    binding = await service.settled_binding(invocation.conversation)
    if (binding is None or binding.ended) and invocation.conversation.thread_id is None:
        subject = service.subject_of(invocation)
        store, where = service.store, invocation.conversation
        newest = await store.latest_in_channel(where, subject)
        newest = newest or await store.latest_in_channel(where, subject, ended=True)
        binding = newest or binding
    return binding


async def _post_diff(
    service: ConversationService, invocation: Invocation, binding: Binding, answer: dict
) -> str:
    """Rule 3."""
    text = str(answer.get("diff") or "")
    branch = str(answer.get("branch") or "the worktree")
    if not text.strip():
        return f"No changes on `{branch}` yet."
    platform = service._platform
    where = binding.conversation
    limits = platform.limits
    head = f"Diff of `{branch}` against `{answer.get('base_branch')}`:\n"
    block = f"{head}{FENCE}diff\n{text.rstrip()}\n{FENCE}"
    data = text.encode()
    if len(block) <= limits.max_message_length:
        await platform.send_message(where, block)
        return "Posted the diff in the thread."
    if 0 < len(data) <= limits.max_upload_bytes:
        await platform.upload_file(where, f"{branch.replace('/', '-')}.diff", "text/x-diff", data)
        cut = " (cut by the machine: the diff is over 1 MB)" if answer.get("truncated") else ""
        return f"Posted the diff in the thread as a file{cut}."
    note = "\n… (cut: the diff is longer than one message)"
    room = limits.max_message_length - len(head) - len(FENCE) * 2 - len("diff\n\n") - len(note)
    await platform.send_message(where, f"{head}{FENCE}diff\n{text[: max(room, 0)]}\n{FENCE}{note}")
    return "Posted the start of the diff in the thread; it is too long for one message."
