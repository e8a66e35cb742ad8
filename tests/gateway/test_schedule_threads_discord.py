"""Scheduled runs land in new Discord threads (issue 30 §5, gateway.sessions.schedule_command):
the real `rawp gateway` process against the fake Discord, real master and client processes,
the demo agent. Schedules are made due as tests/gateway/schedule_threads_support.py says.

One schedule, made in a session thread, lives through every restart:
- the master restarts between the schedule's making and its tick: the tick runs once, and the
  run is a new thread in the channel, opened on `⏰ Scheduled: …`, whose agent asks an
  approval (a button) and answers there; its owner goes on talking in that thread;
- the machine is offline at a tick: the missed run is reported once in the channel;
- the gateway is down while a run starts: once back, the run still gets its new thread;
- nothing is posted twice, and another user cannot pause or delete the schedule."""

from __future__ import annotations

import pytest

from tests.edge.stack import running_stack
from tests.fakes.discord_payloads import DiscordWorld, command_option
from tests.fakes.discord_server import FakeDiscord
from tests.gateway.chat_stack import (
    buttons,
    content,
    discord_ready,
    discord_start,
    start_discord_gateway,
    sub,
)
from tests.gateway.schedule_threads_support import (
    POLL,
    SCAN,
    SCHEDULED_ID,
    YEARLY,
    listed,
    make_due,
    master_db_url,
    start_master,
    stop,
    until,
)

WORLD = DiscordWorld()
OWNER = f"discord:{WORLD.alice['id']}"
PROMPT = "please approve this"  # the demo agent asks an approval first, then answers


@pytest.fixture
def stack(tmp_path):
    with running_stack(tmp_path / "stack", OWNER, env=SCAN) as made:
        yield made


async def command(fake: FakeDiscord, where: str, text: str, user=None) -> str:
    sent = await fake.inject_slash_command(
        "rawp",
        sub("schedule", command_option("text", text)),
        channel_id=where,
        user_payload=user or WORLD.alice,
    )
    webhook = f"/webhooks/{WORLD.application_id}/{sent['token']}"
    return content(await fake.wait_for_call("POST", webhook, timeout=60))


def channel_posts(fake: FakeDiscord, start: str) -> list:
    """The bot's messages in the channel (not in a thread) that begin with `start`."""
    posts = fake.calls("POST", f"/channels/{WORLD.channel_id}/messages")
    return [c for c in posts if content(c).startswith(start)]


async def run_thread(fake: FakeDiscord, schedule_id: str, count: int) -> str:
    """The `count`-th run's thread: opened on its `⏰ Scheduled` message in the channel."""
    posts = f"/channels/{WORLD.channel_id}/messages"
    line = f"⏰ Scheduled: {PROMPT} (schedule `{schedule_id}`)"
    parent = await fake.wait_for_call(
        "POST", posts, where=lambda c: content(c) == line, count=count, timeout=60
    )
    made = await fake.wait_for_call("POST", f"{posts}/{parent.response['id']}/threads", timeout=30)
    return made.response["id"]


async def approve_and_answer(fake: FakeDiscord, thread: str) -> None:
    """The run's approval is a button in its thread; allowed, the agent answers there."""
    posts = f"/channels/{thread}/messages"
    question = await fake.wait_for_call(
        "POST", posts, where=lambda c: "Apply the change" in content(c), timeout=60
    )
    allow = next(b for b in buttons(question) if b.get("label") == "Allow once")
    await fake.inject_button(allow["custom_id"], message=question.response)
    await fake.wait_for_call(
        "POST", posts, where=lambda c: f'You said: "{PROMPT}"' in content(c), timeout=60
    )


async def test_each_run_opens_a_thread_through_restarts_of_every_process(
    stack, processes, tmp_path
):
    db_url = master_db_url(stack)
    async with FakeDiscord(WORLD) as fake:
        gateway = start_discord_gateway(processes, stack, tmp_path, fake, WORLD, **POLL)
        await discord_ready(fake)
        _, session_thread = await discord_start(fake)
        said = await command(fake, session_thread, f'"{YEARLY}" {PROMPT}')
        schedule_id = SCHEDULED_ID.search(said).group(1)

        # The master restarts before the tick: once back, it runs the tick, once.
        stop(stack.processes.procs[0])  # running_stack starts the master first
        await make_due(db_url, schedule_id)
        start_master(stack)
        first = await run_thread(fake, schedule_id, 1)
        await approve_and_answer(fake, first)
        run = await listed(stack.master_url, OWNER, schedule_id)
        assert (run["last_outcome"], run["missed_runs"]) == ("ran", 0)

        # The owner goes on talking in the run's thread: it is the session's.
        await fake.inject_message("and one more thing", channel_id=first)
        await fake.wait_for_call(
            "POST",
            f"/channels/{first}/messages",
            where=lambda c: 'You said: "and one more thing"' in content(c),
            timeout=60,
        )
        # Another user cannot pause or delete it (the master keeps it per user).
        for verb in ("pause", "delete"):
            refused = await command(fake, WORLD.channel_id, f"{verb} {schedule_id}", WORLD.bob)
            assert "SCHEDULE_NOT_FOUND" in refused, refused

        # The machine is offline at the next tick: reported once, in the channel.
        stack.stop_client()
        await make_due(db_url, schedule_id)
        missed = f"⚠️ Schedule `{schedule_id}` missed 1 run:"
        await until(lambda: channel_posts(fake, missed), "the missed run reported")
        stack.start_client()

        # The gateway is down when the next run starts: back, it opens the run's thread.
        stop(gateway)
        await make_due(db_url, schedule_id)

        async def ran_again() -> bool:
            now = await listed(stack.master_url, OWNER, schedule_id)
            return now["last_session_id"] not in (None, run["last_session_id"])

        await until(ran_again, "the run while the gateway was down")
        start_discord_gateway(processes, stack, tmp_path, fake, WORLD, **POLL)
        second = await run_thread(fake, schedule_id, 2)
        assert second != first
        await approve_and_answer(fake, second)

        # Every run and every missed run was posted exactly once.
        assert len(channel_posts(fake, "⏰ Scheduled:")) == 2
        assert len(channel_posts(fake, missed)) == 1
