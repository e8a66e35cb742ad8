"""Gateway replicas' leases, fence, placement and bus against the machine's real Redis
(gateway.replicas.cluster, gateway.replicas.cluster_redis; issue 19 §2–3). Each test has its
own key prefix."""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import os
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.platform import Choice, ConversationRef, Invocation, MessageRef, StaleChoice
from gateway.replicas.cluster import FencedPlatform, LeaseLost, LocalCluster, Unreachable, placement
from gateway.replicas.cluster_redis import RedisCluster
from gateway.replicas.cluster_routing import (
    decode_invocation,
    decode_stale,
    encode_invocation,
    encode_stale,
)
from runtime.tasks import TaskOwner
from tests.scale.conftest import REDIS_URL, redis_prefix  # noqa: F401 (a fixture)

log = logging.getLogger(__name__)


class Replica:
    """A RedisCluster started with recording callbacks."""

    def __init__(self, prefix: str, lease_ms: int = 600) -> None:
        self.cluster = RedisCluster(REDIS_URL, prefix, lease_ms=lease_ms)
        self.lost: list[str] = []
        self.asked: list[tuple[str, dict]] = []
        self.owner = TaskOwner("test cluster", log)

    async def __aenter__(self) -> Replica:
        await self.owner.start()
        await self.cluster.start(self.owner, self._lost, self._handle)
        return self

    async def __aexit__(self, *exc) -> None:
        await self.owner.close()
        await self.cluster.close()

    async def _lost(self, session_id: str) -> None:
        self.lost.append(session_id)

    async def _handle(self, kind: str, body: dict) -> dict:
        self.asked.append((kind, body))
        if kind == "slow":
            await asyncio.sleep(5)
        return {"result": f"{kind} done by {self.cluster.me}"}


async def until(condition, timeout_s: float = 10.0) -> None:
    """Polls `condition` (a renewal loop has no event to wait on)."""
    async with asyncio.timeout(timeout_s):
        while not condition():  # noqa: ASYNC110
            await asyncio.sleep(0.05)


async def test_one_replica_wins_a_lease_keeps_it_renewed_and_the_other_gets_it_once_freed(
    redis_prefix,  # noqa: F811
):
    client, prefix = redis_prefix
    async with Replica(prefix) as a, Replica(prefix) as b:
        assert await a.cluster.claim("s1")
        assert not await b.cluster.claim("s1")
        assert await b.cluster.holder("s1") == a.cluster.me
        await asyncio.sleep(1.5)  # well past the 0.6 s lease: renewals kept it
        assert await client.get(f"{prefix}own:s1") == a.cluster.me.encode()
        assert a.cluster.valid("s1") and not b.cluster.valid("s1")
        await a.cluster.release("s1")
        assert not a.cluster.valid("s1")
        assert await b.cluster.claim("s1")
        assert await a.cluster.holders(["s1", "s2"]) == [b.cluster.me, None]
        assert a.lost == [] and b.lost == []


async def test_a_lease_taken_by_another_replica_is_reported_lost_and_fenced(
    redis_prefix,  # noqa: F811
):
    client, prefix = redis_prefix
    async with Replica(prefix) as a, Replica(prefix) as b:
        assert await a.cluster.claim("s1")
        # The lease expired while A was paused, and B took it (as a sweep would).
        await client.set(f"{prefix}own:s1", b.cluster.me)
        await until(lambda: a.lost == ["s1"])
        assert not a.cluster.valid("s1") and not a.cluster.holds("s1")

        posted: list[str] = []

        class Platform:
            name = "fake"

            async def send_message(self, conversation, text):
                posted.append(text)

            async def add_reaction(self, message, emoji):
                posted.append(emoji)

        fenced = FencedPlatform(Platform(), a.cluster, "s1")
        assert fenced.name == "fake"
        with pytest.raises(LeaseLost):
            await fenced.send_message(None, "late")
        assert await fenced.add_reaction(None, "⏳") is None  # a decoration: skipped quietly
        assert posted == []
        await b.cluster.claim("s1")
        await FencedPlatform(Platform(), b.cluster, "s1").send_message(None, "on time")
        assert posted == ["on time"]


async def test_the_fence_closes_by_the_local_clock_when_renewals_stop(redis_prefix):  # noqa: F811
    _, prefix = redis_prefix
    async with Replica(prefix) as a:
        assert await a.cluster.claim("s1")
        await a.owner.close()  # no renewals any more, as when the process stalls
        await asyncio.sleep(0.6)
        assert not a.cluster.valid("s1")  # the deadline passed before the lease's expiry


async def test_a_request_reaches_the_named_replica_and_a_dead_one_is_unreachable(
    redis_prefix,  # noqa: F811
):
    _, prefix = redis_prefix
    async with Replica(prefix) as a, Replica(prefix) as b:
        assert sorted(await a.cluster.replicas()) == sorted([a.cluster.me, b.cluster.me])
        reply = await a.cluster.request(b.cluster.me, "stop", {"x": 1}, 3)
        assert reply == {"result": f"stop done by {b.cluster.me}"}
        assert b.asked == [("stop", {"x": 1})] and a.asked == []
        with pytest.raises(Unreachable):
            await a.cluster.request(b.cluster.me, "slow", {}, 0.3)
        with pytest.raises(Unreachable):
            await a.cluster.request("nobody", "stop", {}, 3)


def test_placement_is_the_same_everywhere_balanced_and_moves_only_a_dead_replicas_share():
    replicas = ["r1", "r2", "r3"]
    sessions = [f"session-{n}" for n in range(3000)]
    chosen = {s: placement(s, replicas) for s in sessions}
    assert chosen == {s: placement(s, list(reversed(replicas))) for s in sessions}
    counts = collections.Counter(chosen.values())
    assert all(800 < counts[r] < 1200 for r in replicas), counts
    after = {s: placement(s, ["r1", "r3"]) for s in sessions}
    assert all(after[s] == chosen[s] for s in sessions if chosen[s] != "r2")
    assert placement("s", []) is None


async def test_a_single_process_gateway_holds_everything_and_imports_no_redis():
    local = LocalCluster()
    assert await local.claim("s") and local.valid("s") and await local.holder("s") == "local"
    imports = "import sys, gateway.sessions.conversations, rawp_app.launch"
    code = f"{imports}; print('redis' in sys.modules)"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", code, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await proc.communicate()
    assert proc.returncode == 0 and out.decode().strip() == "False"


_text = st.text(min_size=1, max_size=20)
_conversations = st.builds(
    ConversationRef, st.sampled_from(["slack", "discord"]), _text, st.none() | _text
)
_invocations = st.builds(
    Invocation,
    _text,
    _conversations,
    st.none() | st.builds(MessageRef, _conversations, _text),
    st.none() | _text,
)


@given(
    _invocations,
    _text,
    st.builds(Choice, _text, st.none() | _text, st.none() | st.text(max_size=200)),
)
def test_what_a_forwarded_verb_carries_crosses_the_bus_unchanged(invocation, interaction, choice):
    stale = StaleChoice(invocation, interaction, choice)
    assert decode_invocation(json.loads(json.dumps(encode_invocation(invocation)))) == invocation
    assert decode_stale(json.loads(json.dumps(encode_stale(stale)))) == stale


async def test_a_gateway_whose_redis_does_not_answer_says_so_in_one_line(tmp_path):
    from tests.support import free_port

    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "rawp_app.cli", "gateway", "--master-url", "http://127.0.0.1:9",
        "--state-dir", str(tmp_path), "--redis-url", f"redis://127.0.0.1:{free_port()}/0",
        env={
            **os.environ, "RAWP_EDGE_SECRET": "s" * 32, "SLACK_BOT_TOKEN": "xoxb-test",
            "SLACK_MODE": "http", "SLACK_SIGNING_SECRET": "secret", "DISCORD_BOT_TOKEN": "",
            "RAWP_PLATFORM": "",
        },
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _, err = await asyncio.wait_for(proc.communicate(), 60)
    lines = [line for line in err.decode().splitlines() if "could not join" in line]
    assert proc.returncode == 2, err.decode()
    assert lines and "Traceback" not in err.decode(), err.decode()
