"""Three Discord gateway replicas; the session's renderer is SIGKILLed mid-answer (issue 19 §3).

As tests/gateway/test_replicas_failover.py, against the fake Discord. Each replica has its own
gateway connection (each connects to the fake's gateway URL + `/<index>`, which tags it), and
the fake sends an injected event through the connection the test chooses
(`DiscordGateway.only`). On Discord itself every event of a guild arrives through the
connection of the guild's shard, so the prompt and the press of one conversation come through
the same replica (A = B) and differ from the renderer only when the renderer runs another
shard; the test draws A and B independently all the same, which covers that case and more.
Discord de-duplicates a repeated `nonce`, so a repeat is counted by message id.
"""

from __future__ import annotations

import contextlib
import time

import pytest

from tests.fakes.discord_payloads import DiscordWorld
from tests.fakes.discord_server import FakeDiscord
from tests.faults.trials import seeded, trials
from tests.gateway.chat_stack import buttons, content, discord_env, discord_start
from tests.gateway.crash_support import expected_chunks, long_answer_stack
from tests.gateway.replicas_support import (  # noqa: F401 (shared_store: a fixture)
    REPLICAS,
    Gateways,
    median,
    shared_store,
)
from tests.gateway.test_gateway_crash import posted_in
from tests.scale.conftest import redis_prefix  # noqa: F401 (a fixture)
from tests.support import Processes

TRIALS = trials()  # RAWP_FAULT_TRIALS, 20 by default
WORLD = DiscordWorld()
OWNER = f"discord:{WORLD.alice['id']}"


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("replicas-failover-discord")
    with long_answer_stack(tmp, OWNER, ask_first=True) as made:
        yield made


class Connections:
    """Which fake gateway connection is which replica's: replica `n` connects to the fake's
    gateway URL + `/n`, and the fake tags the connection with it."""

    def __init__(self, fake: FakeDiscord) -> None:
        self.fake = fake

    def of(self, n: int):
        tagged = [s for s in self.fake.gateway.sessions if s.tag == str(n) and not s.ws.closed]
        return tagged[-1] if tagged else None

    async def probe(self, n: int) -> bool:
        return self.of(n) is not None

    def env(self, n: int) -> dict[str, str]:
        url = f"{self.fake.gateway_url}/{n}"
        return {**discord_env(self.fake, WORLD), "DISCORD_GATEWAY_URL": url}

    def through(self, n: int) -> None:
        self.fake.gateway.only = self.of(n)


async def test_three_discord_replicas_survive_their_renderer_killed_mid_answer(
    stack,
    tmp_path,
    redis_prefix,  # noqa: F811
    shared_store,  # noqa: F811
):
    client, prefix = redis_prefix
    rng, seed = seeded("replicas failover (Discord)")  # RAWP_FAULT_SEED replays a run
    processes = Processes()
    forwarded = 0
    took: list[float] = []  # from each kill to the answer's last chunk
    interrupted = 0  # trials whose answer was not complete when C died
    try:
        async with FakeDiscord(WORLD) as fake:
            connections = Connections(fake)
            gateways = Gateways(
                processes,
                stack,
                tmp_path,
                prefix,
                connections.env,
                connections.probe,
                shared_store,
            )
            for n in range(REPLICAS):
                gateways.start(n)
            for n in range(REPLICAS):
                await gateways.up(n)
            await fake.wait_for_call("PUT", "/applications/*/commands", timeout=30)
            # The start reaches every replica: each learns the thread (THREAD_CREATE), as the
            # connection of the guild's shard does on Discord.
            _, thread_id = await discord_start(fake, "long")
            await fake.wait_for_call("POST", f"/channels/{thread_id}/messages", timeout=30)
            started = time.monotonic()
            for trial in range(TRIALS):
                tag = f"D{trial}"
                want = expected_chunks(tag)
                kill_after = rng.randrange(len(want))  # chunks posted before the kill
                before = len(posted_in(fake, thread_id))
                c = await gateways.holder(client)
                up = await gateways.ready()
                if len(up) < 2:  # C alone is up: wait for the others
                    for n in range(REPLICAS):
                        await gateways.up(n)
                    up = await gateways.ready()
                a = rng.choice(up)
                b = rng.choice([n for n in up if n != c])
                forwarded += a != c
                roles = f"A={a} B={b} C={c}, killed after {kill_after} of {len(want)} chunks"

                def mine(call, tag=tag):
                    return content(call).startswith(f"{tag}.")

                connections.through(a)
                await fake.inject_message(f"answer trial {tag}", channel_id=thread_id)
                question = await fake.wait_for_call(
                    "POST", f"/channels/{thread_id}/messages",
                    where=lambda c, tag=tag: f"Proceed with {tag}?" in content(c), timeout=60,
                )  # fmt: skip
                allow = next(b for b in buttons(question) if b.get("label") == "Allow once")
                connections.through(b)
                await fake.inject_button(allow["custom_id"], message=question.response)
                fake.gateway.only = None
                # The press reached the renderer's own prompt: it closed it with the outcome
                # (the stale path would answer the agent but leave the prompt open).
                await fake.wait_for_call(
                    "PATCH", f"/channels/{thread_id}/messages/{question.response['id']}",
                    timeout=60,
                )  # fmt: skip
                if kill_after:
                    await fake.wait_for_call(
                        "POST", f"/channels/{thread_id}/messages", count=kill_after,
                        where=mine, timeout=60,
                    )  # fmt: skip
                gateways.kill_and_restart(c)
                killed = time.monotonic()
                done = [text for _, text in posted_in(fake, thread_id)[before:]]
                interrupted += f"{tag} END" not in done
                with contextlib.suppress(TimeoutError):
                    await fake.wait_for_call(
                        "POST", f"/channels/{thread_id}/messages",
                        where=lambda call, tag=tag: content(call) == f"{tag} END", timeout=60,
                    )  # fmt: skip
                took.append(time.monotonic() - killed)
                got = [text for _, text in posted_in(fake, thread_id)[before:]]
                answer = [t for t in got if t.startswith(f"{tag}.") or t == f"{tag} END"]
                assert answer == want, (
                    f"trial {trial + 1}/{TRIALS} (seed {seed}, {roles}): {len(answer)} posted, "
                    f"missing {[w[:12] for w in want if w not in answer]}, "
                    f"repeated {sorted({x[:12] for x in answer if answer.count(x) > 1})}"
                )
            elapsed = time.monotonic() - started
            # Most kills strike mid-answer (a kill after the last block proves little).
            assert interrupted >= TRIALS // 2, f"only {interrupted} of {TRIALS} kills mid-answer"
            print(
                f"{TRIALS} renderer kills among {REPLICAS} Discord replicas in {elapsed:.1f} s, "
                f"0 chunks lost or repeated; {interrupted} kills before the answer's end, "
                f"{forwarded} prompts forwarded to the renderer; "
                f"kill to last chunk: median {median(took):.1f} s, max {max(took):.1f} s"
            )
            gateways.stop()
    finally:
        processes.close()
