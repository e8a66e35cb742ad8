"""Scheduled runs posted into chat (issue 30 §5, docs/schedules.md): each run of a schedule made
from chat opens a new thread in the channel it was made in, and its session is rendered there.

Rules:

1. How the gateway learns of a run: every `schedule_poll_s` seconds it lists, as each user who
   made a schedule on this platform, that user's schedules (`GET /v1/edge/schedules`, the call
   `/rawp schedules` makes). A run that started names its session in `last_session_id`; a run
   that could not start, or ticks skipped while the master was away, raise `missed_runs`.
   Polling needs nothing new from the master or the protocol and survives every restart: what
   was posted is in the gateway's store (gateway.storage.schedule_origins), what ran is in the
   master's, and the next poll after a restart compares the two.
2. Several gateway replicas poll alike; whichever claims a run in the shared store
   (schedule_origins rule 2) posts it, the others do nothing. The poster then claims the
   session's lease (gateway.replicas.cluster) before binding it, as a start from chat does.
3. A run that started: a message `⏰ Scheduled: <prompt> (schedule <id>)` in the channel, a
   thread opened on it (Discord: a thread from that message; Slack: the message's own thread),
   and the thread bound to the run's session exactly as a session started from chat is. The
   session goes live from its start (the "from the start" cursor, docs/protocol.md), so the
   answer the agent already gave is rendered too; approvals become buttons, and the owner goes
   on talking in the thread.
4. Missed runs: one line in the channel per poll that found the count risen — the reason the
   master gave (`last_outcome`) when the latest run could not start. Runs are never re-run or
   piled up here; the master decides what runs (master.edge.sessions.scheduler).
5. A schedule the master no longer lists (deleted) is forgotten. A user the master refuses
   (an expired link, the master away) is skipped until the next poll, and one poll's failure
   is logged and never ends the loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from gateway.edge_client import EdgeApiError
from gateway.platform import ConversationRef
from gateway.storage.schedule_origins import Origin, ScheduleOrigins

if TYPE_CHECKING:
    from gateway.sessions.conversations import ConversationService

log = logging.getLogger(__name__)

FROM_START = (
    "00000000-0000-0000-0000-000000000000"  # docs/protocol.md: edge cursor "from the start"
)
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
    """Rules 1–5 for one `ConversationService` (its platform, store and Edge API client)."""

    def __init__(self, service: ConversationService) -> None:
        self.service = service
        self.origins = ScheduleOrigins(service.store.database)

    async def run(self) -> None:
        """Poll until cancelled (the gateway's race, rawp_app.launch)."""
        while True:
            try:
                await self.poll()
            except Exception:  # rule 5
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
            except EdgeApiError as exc:  # rule 5
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
        await self.service._platform.send_message(channel, text)  # rule 4

    async def _ran(self, origin: Origin, one: dict[str, Any]) -> int:
        session_id = one.get("last_session_id")
        if not session_id or session_id == origin.posted_session_id:
            return 0
        if not await self.origins.claim_run(origin, session_id):
            return 0  # rule 2: another replica posts it
        await self._open(origin, one, session_id)
        return 1

    async def _open(self, origin: Origin, one: dict[str, Any], session_id: str) -> None:
        """Rule 3."""
        service, platform = self.service, self.service._platform
        prompt = str(one.get("prompt") or "")
        channel = ConversationRef(origin.platform, origin.channel_id)
        message = await platform.send_message(channel, scheduled_line(prompt, origin.schedule_id))
        thread = await platform.open_thread_on(message, f"⏰ {prompt}"[:100])
        await service.cluster.claim(session_id)  # rule 2: nobody renders it yet
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
