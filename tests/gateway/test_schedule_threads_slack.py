"""Scheduled runs land in new Slack threads (issue 30 §5, gateway.sessions.schedule_command):
the real `rawp gateway` process in Slack HTTP mode against the fake Slack, real master and
client processes, the demo agent. Schedules are made due as
tests/gateway/schedule_threads_support.py says.

A schedule made with `/rawp schedule` in the channel runs while the gateway is down; once the
gateway is back, the run is a top-level `⏰ Scheduled: …` message in that channel whose thread
is the run's session: its approval is a button there, the answer lands there, and its owner
goes on talking there. The run is posted once, also by two gateway replicas."""

from __future__ import annotations

import pytest

from tests.edge.stack import running_stack
from tests.fakes.slack_payloads import SlackWorld
from tests.fakes.slack_server import FakeSlack
from tests.gateway.chat_stack import (
    bolt_url,
    gateway_args,
    slack_button_click,
    slack_env,
    slack_start,
    slack_text,
    start_slack_gateway,
)
from tests.gateway.replicas_support import shared_store  # noqa: F401 (a fixture)
from tests.gateway.schedule_threads_support import (
    POLL,
    SCAN,
    SCHEDULED_ID,
    YEARLY,
    listed,
    make_due,
    master_db_url,
    stop,
    until,
)
from tests.scale.conftest import REDIS_URL, redis_prefix  # noqa: F401 (a fixture)
from tests.support import free_port, wait_for_http

WORLD = SlackWorld()
OWNER = f"slack:{WORLD.team_id}:{WORLD.alice['id']}"
PROMPT = "please approve this"  # the demo agent asks an approval first, then answers


@pytest.fixture
def stack(tmp_path):
    with running_stack(tmp_path / "stack", OWNER, env=SCAN) as made:
        yield made


async def started(slack: FakeSlack, bolt: str) -> None:
    """`/rawp start`, answered: the session is bound and is the user's last start."""
    await slack_start(slack, WORLD, bolt)
    await slack.log.wait_for_call(
        "POST", "/response-url/*", 60, where=lambda c: "▶️" in str(c.body["text"])
    )


async def test_a_run_while_the_gateway_was_down_gets_its_own_thread(stack, processes, tmp_path):
    async with FakeSlack(WORLD) as slack:
        gateway, bolt = start_slack_gateway(processes, stack, tmp_path, slack, WORLD, **POLL)
        await started(slack, bolt)
        await slack.post_slash_command_to(
            bolt, WORLD.slash_command("/rawp", f'schedule "{YEARLY}" {PROMPT}')
        )
        made = await slack.log.wait_for_call(
            "POST", "/response-url/*", 60, where=lambda c: "⏰ Scheduled `" in str(c.body["text"])
        )
        schedule_id = SCHEDULED_ID.search(str(made.body["text"])).group(1)

        stop(gateway)
        await make_due(master_db_url(stack), schedule_id)

        async def ran() -> bool:
            return bool((await listed(stack.master_url, OWNER, schedule_id))["last_session_id"])

        await until(ran, "the run while the gateway was down")
        _, bolt = start_slack_gateway(processes, stack, tmp_path, slack, WORLD, **POLL)

        line = f"⏰ Scheduled: {PROMPT} (schedule `{schedule_id}`)"
        parent = await slack.wait_for_call(
            "chat.postMessage", where=lambda c: slack_text(c) == line, timeout=60
        )
        assert parent.body.get("channel") == WORLD.channel_id
        assert not parent.body.get("thread_ts")  # top level: its thread is the session
        thread_ts = parent.response["ts"]

        def in_thread(needle: str):
            return lambda c: c.body.get("thread_ts") == thread_ts and needle in slack_text(c)

        question = await slack.wait_for_call(
            "chat.postMessage", where=in_thread("Apply the change"), timeout=60
        )
        click = slack_button_click(WORLD, question, thread_ts, "Allow once")
        assert (await slack.post_interactive_to(bolt, click)).status == 200
        await slack.wait_for_call(
            "chat.postMessage", where=in_thread(f'You said: "{PROMPT}"'), timeout=60
        )

        # The owner goes on talking in the run's thread: it is the session's.
        await slack.post_event_to(bolt, WORLD.message_event("and then?", thread_ts=thread_ts))
        await slack.wait_for_call(
            "chat.postMessage", where=in_thread('You said: "and then?"'), timeout=60
        )
        assert len([c for c in slack.calls("chat.postMessage") if slack_text(c) == line]) == 1


async def test_two_gateway_replicas_post_a_run_once(
    stack,
    processes,
    tmp_path,
    shared_store,  # noqa: F811 (the fixture)
    redis_prefix,  # noqa: F811 (the fixture)
):
    """Two `rawp gateway` replicas on one PostgreSQL store and one Redis prefix both poll the
    schedules; what was posted is shared through the store, so the run is posted by one: one
    `⏰ Scheduled` message, one thread, one answer. (Two replicas reading the same row in the
    same instant is the claim's race, schedule_origins rule 2: a window of milliseconds this
    test cannot aim at, proven by test_two_pollers_on_one_store_claim_a_run_once.)"""
    _, prefix = redis_prefix
    async with FakeSlack(WORLD) as slack:
        bolts = []
        for _ in range(2):
            port = free_port()
            args = [
                *gateway_args(stack, tmp_path), *shared_store,
                "--redis-url", REDIS_URL, "--redis-prefix", prefix,
            ]  # fmt: skip
            gateway = processes.rawp(*args, env=slack_env(slack, WORLD, port, **POLL))
            wait_for_http(bolt_url(port), proc=gateway, timeout=60)
            bolts.append(bolt_url(port))
        await started(slack, bolts[0])
        await slack.post_slash_command_to(
            bolts[1], WORLD.slash_command("/rawp", f'schedule "{YEARLY}" hello from a replica')
        )
        made = await slack.log.wait_for_call(
            "POST", "/response-url/*", 60, where=lambda c: "⏰ Scheduled `" in str(c.body["text"])
        )
        schedule_id = SCHEDULED_ID.search(str(made.body["text"])).group(1)
        await make_due(master_db_url(stack), schedule_id)

        line = f"⏰ Scheduled: hello from a replica (schedule `{schedule_id}`)"
        parent = await slack.wait_for_call(
            "chat.postMessage", where=lambda c: slack_text(c) == line, timeout=60
        )
        thread_ts = parent.response["ts"]
        await slack.wait_for_call(
            "chat.postMessage",
            where=lambda c: (
                c.body.get("thread_ts") == thread_ts
                and 'You said: "hello from a replica"' in slack_text(c)
            ),
            timeout=60,
        )
        # Both replicas poll five times a second; by the answer they have seen the run often.
        assert len([c for c in slack.calls("chat.postMessage") if slack_text(c) == line]) == 1
        answers = [
            c
            for c in slack.calls("chat.postMessage")
            if 'You said: "hello from a replica"' in slack_text(c)
        ]
        assert len(answers) == 1, answers  # one renderer for the run's session
