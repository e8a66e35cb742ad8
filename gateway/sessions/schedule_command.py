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
   each of its runs is posted into a new thread there (rules 5–9).
4. Bad input gets the usage line or the master's message (an unknown phrase, time zone or
   schedule id), never a traceback.

Posting the runs (`ScheduleThreads`, run by rawp_app.launch): each run of a schedule made
from chat opens a new thread in the channel it was made in, and its session is rendered there.
The posting rules:

5. How the gateway learns of a run: every `schedule_poll_s` seconds it lists, as each user who
   made a schedule on this platform, that user's schedules (`GET /v1/edge/schedules`, the call
   `/rawp schedules` makes). A run that started names its session in `last_session_id`; a run
   that could not start, or ticks skipped while the master was away, raise `missed_runs`.
   Polling needs nothing new from the master or the protocol and survives every restart: what
   was posted is in the gateway's store (gateway.storage.schedule_origins), what ran is in the
   master's, and the next poll after a restart compares the two.
6. Several gateway replicas poll alike; whichever claims a run in the shared store
   (gateway.storage.schedule_origins rule 2) posts it, the others do nothing. The poster then
   claims the session's lease (gateway.replicas.cluster) before binding it, as a start from
   chat does.
7. A run that started: a message `⏰ Scheduled: <prompt> (schedule <id>)` in the channel, a
   thread opened on it (Discord: a thread from that message; Slack: the message's own thread),
   and the thread bound to the run's session exactly as a session started from chat is. The
   session goes live from its start (the "from the start" cursor, docs/protocol.md), so the
   answer the agent already gave is rendered too; approvals become buttons, and the owner goes
   on talking in the thread.
8. Missed runs: one line in the channel per poll that found the count risen — the reason the
   master gave (`last_outcome`) when the latest run could not start. Runs are never re-run or
   piled up here; the master decides what runs (master.edge.sessions.scheduler).
9. A schedule the master no longer lists (deleted) is forgotten. A user the master refuses
   (an expired link, the master away) is skipped until the next poll, and one poll's failure
   is logged and never ends the loop.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from gateway.edge_client import EdgeApiError
from gateway.platform import ConversationRef, Invocation
from gateway.sessions.chat_commands import refusal
from gateway.storage.schedule_origins import Origin, ScheduleOrigins

if TYPE_CHECKING:
    from gateway.sessions.conversations import ConversationService

log = logging.getLogger(__name__)

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


# --- posting the runs (rules 5–9) ------------------------------------------------------------

# docs/protocol.md, edge cursor "from the start": the greeting and every frame still held.
FROM_START = "00000000-0000-0000-0000-000000000000"
MAX_PROMPT_SHOWN = 1500  # characters of the prompt in the thread's first message


def scheduled_line(prompt: str, schedule_id: str) -> str:
    shown = prompt if len(prompt) <= MAX_PROMPT_SHOWN else prompt[: MAX_PROMPT_SHOWN - 1] + "…"
    return f"⏰ Scheduled: {shown} (schedule `{schedule_id}`)"


def missed_line(schedule_id: str, count: int, outcome: str | None) -> str:
    runs = "run" if count == 1 else "runs"
    reason = "the master or the machine was away"
    if outcome and outcome.startswith("missed:"):
        reason = outcome.removeprefix("missed:").strip()
    return f"⚠️ Schedule `{schedule_id}` missed {count} {runs}: {reason}. The next tick runs again."


class ScheduleThreads:
    """Rules 5–9 for one `ConversationService` (its platform, store and Edge API client)."""

    def __init__(self, service: ConversationService) -> None:
        self.service = service
        self.origins = ScheduleOrigins(service.store.database)

    async def run(self) -> None:
        """Poll until cancelled (the gateway's race, rawp_app.launch)."""
        while True:
            try:
                await self.poll()
            except Exception:  # rule 9
                log.exception("polling the schedules failed; the next poll tries again")
            await asyncio.sleep(self.service.settings.schedule_poll_s)

    async def poll(self) -> int:
        """One look at every schedule made on this platform; how many runs were posted."""
        platform = self.service._platform.name
        by_subject: dict[str, list[Origin]] = defaultdict(list)
        for origin in await self.origins.on_platform(platform):
            by_subject[origin.subject].append(origin)
        posted = 0
        for subject, origins in by_subject.items():
            try:
                listed = await self.service.edge.list_schedules(subject)
            except EdgeApiError as exc:  # rule 9
                log.info("schedules of %s not read: %s", subject, exc)
                continue
            known = {str(one.get("schedule_id")): one for one in listed}
            for origin in origins:
                one = known.get(origin.schedule_id)
                if one is None:
                    await self.origins.forget(origin.schedule_id)
                    continue
                await self._missed(origin, one)
                posted += await self._ran(origin, one)
        return posted

    async def _missed(self, origin: Origin, one: dict[str, Any]) -> None:
        missed = int(one.get("missed_runs") or 0)
        if missed <= origin.reported_missed or not await self.origins.claim_missed(origin, missed):
            return
        text = missed_line(
            origin.schedule_id, missed - origin.reported_missed, one.get("last_outcome")
        )
        channel = ConversationRef(origin.platform, origin.channel_id)
        await self.service._platform.send_message(channel, text)  # rule 8

    async def _ran(self, origin: Origin, one: dict[str, Any]) -> int:
        session_id = one.get("last_session_id")
        if not session_id or session_id == origin.posted_session_id:
            return 0
        if not await self.origins.claim_run(origin, session_id):
            return 0  # rule 6: another replica posts it
        await self._open(origin, one, session_id)
        return 1

    async def _open(self, origin: Origin, one: dict[str, Any], session_id: str) -> None:
        """Rule 7."""
        service, platform = self.service, self.service._platform
        prompt = str(one.get("prompt") or "")
        channel = ConversationRef(origin.platform, origin.channel_id)
        message = await platform.send_message(channel, scheduled_line(prompt, origin.schedule_id))
        thread = await platform.open_thread_on(message, f"⏰ {prompt}"[:100])
        # A conversation without threads (a Discord DM) is the thread: its session is replaced,
        # as a start there replaces it (ConversationService.open_session).
        await service._replace_previous(thread, origin.subject)
        await service.cluster.claim(session_id)  # rule 6: nobody renders it yet
        try:
            binding = await service.store.bind(
                thread,
                subject=origin.subject,
                session_id=session_id,
                node_id=str(one.get("node_id")),
                agent_name=str(one.get("agent_name")),
            )
            await service.store.save_cursor(session_id, FROM_START)
            await service.go_live_once(binding, ticket=None)
        finally:
            if session_id not in service.live:
                await service.cluster.release(session_id)
        log.info("schedule %s: run %s posted into a new thread", origin.schedule_id, session_id)
