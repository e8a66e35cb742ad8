"""The gateway dies mid-answer on Slack and comes back (issue 14 §4): every block once, in order.

As tests/gateway/test_gateway_crash.py, against the fake Slack in HTTP mode. Slack has no
`nonce`: the renderer records each post before the next, and a post whose outcome was never
recorded is looked for in the thread by its metadata key before it is posted again. Slack
allows 40,000 characters a message, so each block of the answer is one message, named by its
first word. Fewer trials than on Discord (a Slack gateway restart costs about as much, and the
shared parts are the same); the master and client live across the trials.
"""

from __future__ import annotations

import contextlib
import random
import signal
import time

import pytest

from tests.fakes.slack_payloads import SlackWorld
from tests.fakes.slack_server import FakeSlack
from tests.gateway.chat_stack import bolt_url, gateway_args, slack_env, slack_greeting, slack_start
from tests.gateway.crash_support import blocks, long_answer_stack
from tests.support import Processes, free_port, wait_for_http

TRIALS = 8
WORLD = SlackWorld()
OWNER = f"slack:{WORLD.team_id}:{WORLD.alice['id']}"


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    with long_answer_stack(tmp_path_factory.mktemp("gateway-crash-slack"), OWNER) as made:
        yield made


def text_of(call) -> str:
    return str(call.body.get("text") or "")


def label(text: str) -> str:
    return text.split()[0] if text.split() else ""


def posted_in(slack: FakeSlack, thread_ts: str) -> list[str]:
    """The first word of every message made in the thread (each post is a new message)."""
    return [
        label(text_of(c))
        for c in slack.ok_calls("chat.postMessage")
        if c.body.get("thread_ts") == thread_ts
    ]


async def test_a_slack_gateway_killed_mid_answer_posts_every_block_once(stack, tmp_path):
    rng = random.Random()
    seed = rng.randrange(1 << 30)
    rng.seed(seed)
    processes = Processes()
    log = (tmp_path / "gateway.log").open("ab")
    try:
        async with FakeSlack(WORLD) as slack:
            port = free_port()
            env = slack_env(slack, WORLD, port)
            args = gateway_args(stack, tmp_path)
            bolt = bolt_url(port)
            gateway = processes.rawp(*args, env=env, stdout=log)
            wait_for_http(bolt, proc=gateway, timeout=60)
            _, thread_ts = await slack_start(slack, WORLD, bolt, "long")
            await slack_greeting(slack)
            started = time.monotonic()
            for trial in range(TRIALS):
                tag = f"S{trial}"
                want = [label(text) for text in blocks(tag)]
                kill_after = rng.randrange(len(want))  # blocks posted before the kill
                before = len(posted_in(slack, thread_ts))

                def mine(call, tag=tag):
                    return call.body.get("thread_ts") == thread_ts and label(
                        text_of(call)
                    ).startswith(f"{tag}.")

                def typing(call, thread_ts=thread_ts):
                    return call.body.get("thread_ts") == thread_ts and bool(call.body["status"])

                typed = len([c for c in slack.calls("assistant.threads.setStatus") if typing(c)])
                event = WORLD.message_event(f"answer trial {tag}", thread_ts=thread_ts)
                await slack.post_event_to(bolt, event)
                if kill_after:
                    await slack.wait_for_call(
                        "chat.postMessage", count=kill_after, where=mine, timeout=60
                    )
                else:  # before any block: once its turn started (typing, its first call)
                    await slack.wait_for_call(
                        "assistant.threads.setStatus", count=typed + 1, where=typing, timeout=60
                    )
                gateway.send_signal(signal.SIGKILL)
                gateway.wait(timeout=30)
                gateway = processes.rawp(*args, env=env, stdout=log)
                wait_for_http(bolt, proc=gateway, timeout=60)
                # If the answer's end never comes, the assertion below says what did.
                with contextlib.suppress(TimeoutError):
                    await slack.wait_for_call(
                        "chat.postMessage",
                        where=lambda c, tag=tag: text_of(c) == f"{tag} END",
                        timeout=60,
                    )

                # The turn began before the kill: its prompt still ends up ✅ (turn origins).
                def checked(call, ts=event["ts"]):
                    return call.body.get("timestamp") == ts and (
                        call.body.get("name") == "white_check_mark"
                    )

                with contextlib.suppress(TimeoutError):
                    await slack.wait_for_call("reactions.add", where=checked, timeout=30)
                got = posted_in(slack, thread_ts)[before:]
                answer = [w for w in got if w.startswith(f"{tag}.") or w == tag]
                assert answer == want, (
                    f"trial {trial + 1}/{TRIALS} (seed {seed}, killed after {kill_after} of "
                    f"{len(want)} blocks): posted {answer}"
                )
                assert slack.calls("reactions.add") and any(
                    checked(c) for c in slack.calls("reactions.add")
                ), f"trial {trial + 1}/{TRIALS}: the prompt never got its ✅"
            elapsed = time.monotonic() - started
            searched = len(slack.calls("conversations.replies"))
            print(
                f"{TRIALS} Slack gateway kills in {elapsed:.1f} s, 0 blocks lost or repeated "
                f"({searched} posts of unknown outcome looked for in the thread)"
            )
            gateway.terminate()  # before the fake Slack goes away under it
            gateway.wait(timeout=30)
    finally:
        processes.close()
        log.close()
