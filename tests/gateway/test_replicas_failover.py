"""Three Slack gateway replicas; the session's renderer is SIGKILLed mid-answer (issue 19 §2–3).

Real processes throughout: a master and a client running a jsonl script agent that asks for an
approval and then streams a long answer (tests/gateway/crash_support.py), three `rawp gateway`
processes sharing one conversation store and the machine's Redis (a key prefix of their own;
tests/gateway/replicas_support.py), and the fake Slack in HTTP mode: every replica serves its
own Events API endpoint, as replicas behind a load balancer do, so the test chooses which
replica an event reaches. (Socket Mode spreads an app's events over its connections the same
way; HTTP mode lets the test pick the replica without a fake load balancer.)

Each trial: the prompt goes to replica A; the renderer C is the holder of the session's lease
in Redis; the approval button is pressed through replica B ≠ C (the press reaches C's prompt
board over the bus, and C closes the prompt); C is SIGKILLed once a random number of the
answer's blocks were posted and started again as a new process. A surviving replica takes
the session over and the answer completes: every block exactly once, in order. Roles are drawn
per trial among the replicas up (A may be C); one stack and one session serve every trial.
`RAWP_FAULT_TRIALS` sets the number of trials (20).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import time

import pytest

from tests.fakes.slack_payloads import SlackWorld
from tests.fakes.slack_server import FakeSlack
from tests.faults.trials import seeded, trials
from tests.gateway.chat_stack import bolt_url, slack_env, slack_greeting, slack_start
from tests.gateway.crash_support import blocks, long_answer_stack
from tests.gateway.replicas_support import (  # noqa: F401 (shared_store: a fixture)
    REPLICAS,
    Gateways,
    median,
    shared_store,
)
from tests.scale.conftest import redis_prefix  # noqa: F401 (a fixture)
from tests.support import Processes, free_port, wait_for_http

TRIALS = trials()  # RAWP_FAULT_TRIALS, 20 by default
WORLD = SlackWorld()
OWNER = f"slack:{WORLD.team_id}:{WORLD.alice['id']}"


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("replicas-failover")
    with long_answer_stack(tmp, OWNER, ask_first=True) as made:
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


def allow_button(question) -> tuple[str, dict]:
    raw = question.body.get("blocks") or []
    found = json.loads(raw) if isinstance(raw, str) else raw
    return next(
        (block.get("block_id", "actions"), element)
        for block in found
        if block.get("type") == "actions"
        for element in block.get("elements", [])
        if element["text"]["text"] == "Allow once"
    )


async def paused_renderer_is_fenced(slack, gateways: Gateways, client, bolts, thread_ts) -> None:
    """The renderer C is paused (SIGSTOP) before a prompt sent through A ≠ C: A's forwarded
    prompt gets no answer, C's lease expires, another replica takes the session over and the
    turn runs there. Resumed (SIGCONT), C finds its lease gone and lets the session go; it
    posts nothing of the turn (the fence), so every block is there once."""
    for n in range(REPLICAS):
        await gateways.up(n)
    c = await gateways.holder(client)
    a, b = [n for n in range(REPLICAS) if n != c]
    before = len(posted_in(slack, thread_ts))
    asked = len([q for q in slack.ok_calls("chat.postMessage") if "Proceed with P?" in text_of(q)])
    log = gateways.logs[c]
    let_go = log.read_text("utf-8").count("stops rendering session")
    gateways.procs[c].send_signal(signal.SIGSTOP)
    try:
        event = WORLD.message_event("answer trial P", thread_ts=thread_ts)
        assert (await slack.post_event_to(bolts[a], event)).status == 200
        question = await slack.wait_for_call(
            "chat.postMessage", where=lambda q: "Proceed with P?" in text_of(q), timeout=60
        )
        block_id, allow = allow_button(question)
        message = {**question.body, "ts": question.response["ts"], "thread_ts": thread_ts}
        click = WORLD.block_actions(
            allow["action_id"], allow["value"], message=message, block_id=block_id
        )
        assert (await slack.post_interactive_to(bolts[b], click)).status == 200
        await slack.wait_for_call(
            "chat.postMessage", where=lambda call: text_of(call) == "P END", timeout=60
        )
        assert await gateways.holder(client) != c
    finally:
        gateways.procs[c].send_signal(signal.SIGCONT)
    async with asyncio.timeout(30):  # C's renewal found the lease another's: it let go
        while log.read_text("utf-8").count("stops rendering session") == let_go:  # noqa: ASYNC110
            await asyncio.sleep(0.1)
    answer = [w for w in posted_in(slack, thread_ts)[before:] if w.startswith("P.") or w == "P"]
    assert answer == [label(text) for text in blocks("P")], f"after a pause: posted {answer}"
    questions = [q for q in slack.ok_calls("chat.postMessage") if "Proceed with P?" in text_of(q)]
    assert len(questions) == asked + 1, "the paused renderer posted the question again"


async def test_three_slack_replicas_survive_their_renderer_killed_mid_answer(
    stack,
    tmp_path,
    redis_prefix,  # noqa: F811
    shared_store,  # noqa: F811
):
    client, prefix = redis_prefix
    rng, seed = seeded("replicas failover (Slack)")  # RAWP_FAULT_SEED replays a run
    processes = Processes()
    forwarded = 0
    took: list[float] = []  # from each kill to the answer's last block
    interrupted = 0  # trials whose answer was not complete when C died
    try:
        async with FakeSlack(WORLD) as slack:
            bolts: list[str] = [""] * REPLICAS

            def env_for(n: int) -> dict[str, str]:
                port = free_port()  # anew at each start: another test may have taken the last
                bolts[n] = bolt_url(port)
                return slack_env(slack, WORLD, port)

            async def probe(n: int) -> bool:
                try:
                    await asyncio.to_thread(wait_for_http, bolts[n], 0.5)
                except TimeoutError:
                    return False
                return True

            gateways = Gateways(processes, stack, tmp_path, prefix, env_for, probe, shared_store)
            for n in range(REPLICAS):
                gateways.start(n)
            for n in range(REPLICAS):
                await gateways.up(n)
            _, thread_ts = await slack_start(slack, WORLD, bolts[0], "long")
            await slack_greeting(slack)
            started = time.monotonic()
            for trial in range(TRIALS):
                tag = f"R{trial}"
                want = [label(text) for text in blocks(tag)]
                kill_after = rng.randrange(len(want))  # blocks posted before the kill
                before = len(posted_in(slack, thread_ts))
                c = await gateways.holder(client)
                up = await gateways.ready()
                if len(up) < 2:  # C alone is up: wait for the others
                    for n in range(REPLICAS):
                        await gateways.up(n)
                    up = await gateways.ready()
                a = rng.choice(up)
                b = rng.choice([n for n in up if n != c])
                forwarded += a != c
                roles = f"A={a} B={b} C={c}, killed after {kill_after} of {len(want)} blocks"

                def mine(call, tag=tag):
                    return call.body.get("thread_ts") == thread_ts and label(
                        text_of(call)
                    ).startswith(f"{tag}.")

                event = WORLD.message_event(f"answer trial {tag}", thread_ts=thread_ts)
                assert (await slack.post_event_to(bolts[a], event)).status == 200
                question = await slack.wait_for_call(
                    "chat.postMessage",
                    where=lambda c, tag=tag: f"Proceed with {tag}?" in text_of(c),
                    timeout=60,
                )
                block_id, allow = allow_button(question)
                message = {**question.body, "ts": question.response["ts"], "thread_ts": thread_ts}
                click = WORLD.block_actions(
                    allow["action_id"], allow["value"], message=message, block_id=block_id
                )
                assert (await slack.post_interactive_to(bolts[b], click)).status == 200
                # The press reached the renderer's own prompt: it closed it with the outcome
                # (the stale path would answer the agent but leave the prompt open).
                await slack.wait_for_call(
                    "chat.update",
                    where=lambda c, ts=question.response["ts"]: c.body.get("ts") == ts,
                    timeout=60,
                )
                if kill_after:
                    await slack.wait_for_call(
                        "chat.postMessage", count=kill_after, where=mine, timeout=60
                    )
                gateways.kill_and_restart(c)
                killed = time.monotonic()
                interrupted += tag not in posted_in(slack, thread_ts)[before:]  # END not yet
                # If the answer's end never comes, the assertion below says what did.
                with contextlib.suppress(TimeoutError):
                    await slack.wait_for_call(
                        "chat.postMessage",
                        where=lambda call, tag=tag: text_of(call) == f"{tag} END",
                        timeout=60,
                    )
                took.append(time.monotonic() - killed)
                got = posted_in(slack, thread_ts)[before:]
                answer = [w for w in got if w.startswith(f"{tag}.") or w == tag]
                assert answer == want, (
                    f"trial {trial + 1}/{TRIALS} (seed {seed}, {roles}): posted {answer}"
                )
            elapsed = time.monotonic() - started
            # Most kills strike mid-answer (a kill after the last block proves little).
            assert interrupted >= TRIALS // 2, f"only {interrupted} of {TRIALS} kills mid-answer"
            await paused_renderer_is_fenced(slack, gateways, client, bolts, thread_ts)
            # A file autocomplete typed on a replica that does not render the session: the
            # renderer asks the client (K-10) and the answer comes back over the bus.
            c = await gateways.holder(client)
            elsewhere = next(n for n in await gateways.ready() if n != c)
            where = json.dumps({"c": WORLD.channel_id, "t": thread_ts})
            view = WORLD.view("rawp_prompt_view", private_metadata=where)
            typed = WORLD.block_suggestion("rawp_file", "auth", block_id="files", view=view)
            answer = await slack.post_interactive_to(bolts[elsewhere], typed)
            assert "src/auth.py" in [o["value"] for o in answer.json()["options"]]
            print(
                f"{TRIALS} renderer kills among {REPLICAS} Slack replicas in {elapsed:.1f} s, "
                f"0 blocks lost or repeated; {interrupted} kills before the answer's end, "
                f"{forwarded} prompts forwarded to the renderer; "
                f"kill to last block: median {median(took):.1f} s, max {max(took):.1f} s"
            )
            gateways.stop()
    finally:
        processes.close()
