"""The gateway dies mid-answer and comes back (issue 14 §4): every chunk exactly once, in order.

Real processes throughout: a master and a client (`--dev` on loopback) running a jsonl script
agent that streams a long answer of many blocks, and the real `rawp gateway` against the fake
Discord. Each trial sends a prompt in the session's thread, SIGKILLs the gateway once a random
number of the answer's chunks were posted, starts it again at once, and waits for the answer's
last chunk. The fake's recorded calls then hold every chunk of the answer once (Discord
de-duplicates a repeated `nonce`, so a repeat is counted by message id), in order. The master
and client live across the trials; only the gateway restarts.
"""

from __future__ import annotations

import contextlib
import random
import signal
import time

import pytest

from tests.fakes.discord_payloads import DiscordWorld
from tests.fakes.discord_server import FakeDiscord
from tests.gateway.chat_stack import (
    content,
    discord_env,
    discord_ready,
    discord_start,
    gateway_args,
)
from tests.gateway.crash_support import expected_chunks, long_answer_stack
from tests.support import Processes

TRIALS = 20
WORLD = DiscordWorld()
OWNER = f"discord:{WORLD.alice['id']}"


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    with long_answer_stack(tmp_path_factory.mktemp("gateway-crash"), OWNER) as made:
        yield made


def posted_in(fake: FakeDiscord, thread_id: str) -> list[tuple[str, str]]:
    """(message id, content) of every message made in the thread, once per message id."""
    seen: dict[str, str] = {}
    for call in fake.calls("POST", f"/channels/{thread_id}/messages"):
        if call.status == 200 and isinstance(call.response, dict):
            seen.setdefault(str(call.response["id"]), content(call))
    return list(seen.items())


async def test_a_gateway_killed_mid_answer_posts_every_chunk_once(stack, tmp_path):
    rng = random.Random()
    seed = rng.randrange(1 << 30)
    rng.seed(seed)
    processes = Processes()
    log = (tmp_path / "gateway.log").open("ab")
    try:
        async with FakeDiscord(WORLD) as fake:
            env = discord_env(fake, WORLD)
            args = gateway_args(stack, tmp_path)
            gateway = processes.rawp(*args, env=env, stdout=log)
            await discord_ready(fake)
            _, thread_id = await discord_start(fake, "long")
            await fake.wait_for_call("POST", f"/channels/{thread_id}/messages", timeout=30)
            identified = len(fake.calls("WS", "IDENTIFY"))
            started = time.monotonic()
            for trial in range(TRIALS):
                tag = f"T{trial}"
                want = expected_chunks(tag)
                kill_after = rng.randrange(len(want))  # chunks posted before the kill
                before = len(posted_in(fake, thread_id))

                def mine(call, tag=tag):
                    return content(call).startswith(f"{tag}.")

                typing = f"/channels/{thread_id}/typing"
                typed = len(fake.calls("POST", typing))
                prompt = await fake.inject_message(f"answer trial {tag}", channel_id=thread_id)
                if kill_after:
                    await fake.wait_for_call(
                        "POST", f"/channels/{thread_id}/messages", count=kill_after,
                        where=mine, timeout=60,
                    )  # fmt: skip
                else:  # before any chunk: once its turn started (typing, its first call)
                    await fake.wait_for_call("POST", typing, count=typed + 1, timeout=60)
                gateway.send_signal(signal.SIGKILL)
                gateway.wait(timeout=30)
                gateway = processes.rawp(*args, env=env, stdout=log)
                identified += 1
                await fake.wait_for_call("WS", "IDENTIFY", count=identified, timeout=60)
                await fake.wait_for_ready_client(timeout=60)  # the next prompt reaches it
                # If the answer's end never comes, the assertion below says what did.
                with contextlib.suppress(TimeoutError):
                    await fake.wait_for_call(
                        "POST", f"/channels/{thread_id}/messages",
                        where=lambda c, tag=tag: content(c) == f"{tag} END", timeout=60,
                    )  # fmt: skip
                # The turn began before the kill: its prompt still ends up ✅ (turn origins).
                with contextlib.suppress(TimeoutError):
                    await fake.wait_for_call(
                        "PUT", f"/channels/{thread_id}/messages/{prompt['id']}/reactions/✅/@me",
                        timeout=30,
                    )  # fmt: skip
                checked = fake.calls(
                    "PUT", f"/channels/{thread_id}/messages/{prompt['id']}/reactions/✅/@me"
                )
                got = [text for _, text in posted_in(fake, thread_id)[before:]]
                answer = [t for t in got if t.startswith(f"{tag}.") or t == f"{tag} END"]
                assert answer == want, (
                    f"trial {trial + 1}/{TRIALS} (seed {seed}, killed after {kill_after} of "
                    f"{len(want)} chunks): {len(answer)} posted, "
                    f"missing {[w[:12] for w in want if w not in answer]}, "
                    f"repeated {sorted({a[:12] for a in answer if answer.count(a) > 1})}"
                )
                assert checked, f"trial {trial + 1}/{TRIALS}: the prompt never got its ✅"
            elapsed = time.monotonic() - started
            posts = fake.calls("POST", f"/channels/{thread_id}/messages")
            absorbed = len(posts) - len(posted_in(fake, thread_id))
            print(
                f"{TRIALS} gateway kills in {elapsed:.1f} s, 0 chunks lost or repeated "
                f"({absorbed} repeated posts answered with the first message by nonce)"
            )
            gateway.terminate()  # before the fake Discord goes away under it
            gateway.wait(timeout=30)
    finally:
        processes.close()
        log.close()
