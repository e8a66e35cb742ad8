"""`/rawp schedule …` and `/rawp schedules` (issue 30 §5, docs/schedules.md): scheduled prompts
made and managed from chat; the verb behind `ConversationHooks.schedule`.

Rules:

1. `schedule "<cron or phrase>" <prompt>` makes one. The node and agent are the conversation's
   session's (the thread's, or the user's newest in the channel) when the user owns it, else
   the user's last start; with neither, the user is told to start a session first. In another
   user's session thread the command is refused: only a session's owner schedules from it.
2. `schedules` (or `schedule list`) lists the user's own schedules; `schedule
   pause|resume|delete <id>` changes one. The master keeps schedules per user, so a user only
   ever sees or changes their own (another's id is "not found").
3. A schedule made is remembered with the channel it was typed in (a thread's parent channel):
   each of its runs is posted into a new thread there (gateway.sessions.schedule_threads).
4. Bad input gets the usage line or the master's message (an unknown phrase, time zone or
   schedule id), never a traceback.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from gateway.edge_client import EdgeApiError
from gateway.platform import Invocation
from gateway.sessions.chat_commands import refusal
from gateway.storage.schedule_origins import ScheduleOrigins

if TYPE_CHECKING:
    from gateway.sessions.conversations import ConversationService

USAGE = (
    '❌ Use `schedule "<cron or phrase>" <prompt>` (phrases: "every day 18:30", "every weekday '
    '9:00", "every monday 9:00"), `schedules`, or `schedule pause|resume|delete <id>`.'
)
NO_TARGET = "❌ Start a session first: a schedule runs on the node and agent of your last start."
NOT_YOURS = "❌ Only this session's owner can schedule prompts from its thread."
CHANGES = ("pause", "resume", "delete")
QUOTED = re.compile(r'^"([^"]+)"\s+(.+)$', re.DOTALL)  # "<when>" <prompt, apostrophes and all>
CURLY = str.maketrans({"“": '"', "”": '"', "‘": "'", "’": "'"})


async def schedule(service: ConversationService, invocation: Invocation, text: str | None) -> str:
    said = (text or "").translate(CURLY).strip()  # chat apps turn typed quotes into curly ones
    words = said.split()
    subject = service.subject_of(invocation)
    try:
        if not words or words == ["list"]:
            return _listing(await service.edge.list_schedules(subject))
        if words[0] in CHANGES and len(words) == 2:
            return await _change(service, subject, words[0], words[1])
        quoted = QUOTED.match(said)
        if quoted is None or not quoted.group(2).strip():
            return USAGE
        when, prompt = quoted.group(1), quoted.group(2).strip()
        return await _create(service, invocation, subject, when, prompt)
    except EdgeApiError as exc:
        return refusal(exc)  # rule 4


async def _create(
    service: ConversationService, invocation: Invocation, subject: str, when: str, prompt: str
) -> str:
    binding = await service.settled_binding(invocation.conversation)
    if binding is None and invocation.conversation.thread_id is None:
        binding = await service.store.latest_in_channel(invocation.conversation, subject)
    if binding is not None and binding.subject != subject:
        return NOT_YOURS  # rule 1
    target = (binding.node_id, binding.agent_name) if binding is not None else None
    target = target or await service.store.last_start(subject)
    if target is None:
        return NO_TARGET
    made = await service.edge.create_schedule(
        subject,
        {
            "node_id": target[0],
            "agent_name": target[1],
            "workspace_path": service.settings.workspace_path or None,
            "prompt": prompt,
            "schedule": when,
        },
    )
    where = invocation.conversation  # its runs are posted into new threads of this channel
    await ScheduleOrigins(service.store.database).remember(
        str(made.get("schedule_id")), where.platform, where.channel_id, subject
    )
    return (
        f"⏰ Scheduled `{made.get('schedule_id')}`: `{made.get('schedule')}` "
        f"({made.get('timezone')}) on agent {made.get('agent_name')}; next run "
        f"{made.get('next_run_at')}."
    )


async def _change(service: ConversationService, subject: str, verb: str, schedule_id: str) -> str:
    if verb == "delete":
        await service.edge.delete_schedule(subject, schedule_id)
        return f"🗑 Deleted schedule `{schedule_id}`."
    changed = await service.edge.pause_schedule(subject, schedule_id, verb == "pause")
    state = "paused" if changed.get("paused") else f"resumed; next run {changed.get('next_run_at')}"
    return f"⏰ Schedule `{schedule_id}` {state}."


def _listing(schedules: list[dict]) -> str:
    if not schedules:
        return 'No schedules yet. Make one with `schedule "every weekday 9:00" <prompt>`.'
    lines = ["Your schedules:"]
    for one in schedules:
        state = "paused" if one.get("paused") else f"next {one.get('next_run_at')}"
        missed = f", {one['missed_runs']} missed" if one.get("missed_runs") else ""
        prompt = str(one.get("prompt") or "")
        short = prompt if len(prompt) <= 60 else prompt[:59] + "…"
        lines.append(
            f"• `{one.get('schedule_id')}` `{one.get('schedule')}` ({one.get('timezone')}), "
            f"{one.get('agent_name')}: {short} — {state}{missed}"
        )
    return "\n".join(lines)
