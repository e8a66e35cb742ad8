"""Three replicas, one platform budget (issue 19 §5, "what must hold").

Three processes (tests/gateway/budget_replica.py), each a real SlackPlatform behind the
BudgetedPlatform that `rawp gateway` binds, spend one budget in the machine's Redis with an
injected low limit, against one fake Slack that records every call on the machine's monotonic
clock. Two replicas post chunks and queue many status updates; once chunks flow, the third
posts an approval. Checked on the fake's record:

- in every window of the recorded calls, the calls to a budgeted route never exceed what its
  bucket allows (burst + rate × window length), across the three processes together;
- every chunk is posted exactly once, in order, in its conversation; every status too;
- the approval is posted before most of the status updates pending when it was queued.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

from gateway.replicas.platform_budget import GLOBAL
from tests.fakes.slack_server import FakeSlack
from tests.gateway.budget_replica import CHUNKS, LOW_ROUTES, STATUSES
from tests.scale.conftest import REDIS_URL, redis_prefix  # noqa: F401  (the fixture)
from tests.support import Processes

# The fake records a call when it arrives, a little after its token was spent; arrivals of
# calls admitted W apart may come closer by the difference of two network delays (JITTER_S).
# It is well under one token's time at these rates, so it adds no call to any bound.
JITTER_S = 0.1


def max_in_window(times: list[float], rate: float, burst: int) -> tuple[int, int]:
    """(the most calls seen in any window [t_i, t_j], what a bucket allows there), for the
    worst window: the one most over (or least under) its allowance."""
    times = sorted(times)
    worst = (0, burst)
    for i in range(len(times)):
        for j in range(i, len(times)):
            seen = j - i + 1
            allowed = burst + int(rate * max(0.0, times[j] - times[i] + JITTER_S))
            if seen - allowed > worst[0] - worst[1]:
                worst = (seen, allowed)
    return worst


async def line_of(proc: subprocess.Popen) -> dict:
    while True:
        raw = await asyncio.to_thread(proc.stdout.readline)
        if not raw:
            raise AssertionError(f"replica ended (exit {proc.poll()}) before answering")
        text = raw.decode().strip()
        if text.startswith("{"):
            return json.loads(text)
        print("replica:", text)  # a log line: shown if the test fails


async def test_three_replicas_share_one_budget(redis_prefix):  # noqa: F811
    _client, prefix = redis_prefix
    processes = Processes()
    async with FakeSlack() as slack:
        world = slack.world
        try:

            def replica(role: str) -> subprocess.Popen:
                argv = [sys.executable, "-m", "tests.gateway.budget_replica", role]
                argv += [slack.api_base_url, world.bot_token, REDIS_URL, prefix, world.channel_id]
                return processes.start(argv, stdin=subprocess.PIPE)

            approver = replica("approve")
            loaders = [replica("load:a"), replica("load:b")]
            await slack.log.wait_for_call("POST", "chat.postMessage", timeout=30, count=3)
            approver.stdin.write(b"go\n")
            approver.stdin.flush()
            queued_at = (await line_of(approver))["queued"]
            for proc in [approver, *loaders]:
                assert await line_of(proc) == {"done": True}
                assert await asyncio.to_thread(proc.wait, 30) == 0
        finally:
            processes.close()
        calls = [c for c in slack.log.calls if c.method != "WS"]

    # 1. No window of the record holds more calls than a bucket allows.
    for route, limit in LOW_ROUTES.items():
        times = [c.at for c in calls if route == GLOBAL or c.path == route]
        seen, allowed = max_in_window(times, limit.per_second, limit.burst)
        assert seen <= allowed, f"{route}: {seen} calls where the budget allows {allowed}"

    # 2. Nothing lost, nothing twice, chunks in order per conversation.
    posts = [c for c in calls if c.path == "chat.postMessage"]
    for name in "ab":
        for c in range(2):
            thread = f"{name}-chunks{c}.000200"
            got = [str(p.body["text"]) for p in posts if p.body["thread_ts"] == thread]
            assert got == [f"{name} c{c} chunk {i}" for i in range(CHUNKS)]
    statuses = [c for c in calls if c.path == "assistant.threads.setStatus"]
    assert len(statuses) == 2 * STATUSES
    assert len({s.body["thread_ts"] for s in statuses}) == 2 * STATUSES

    # 3. The approval overtook the status updates pending when it was queued.
    (approval,) = [p for p in posts if str(p.body["text"]).startswith("❓")]
    pending = [s for s in statuses if s.at > queued_at and _queued(s) < queued_at]
    after = [s for s in pending if s.at > approval.at]
    assert pending, "no status update was pending when the approval was queued"
    assert len(after) * 2 >= len(pending), (
        f"only {len(after)} of {len(pending)} pending status updates came after the approval"
    )


def _queued(call) -> float:
    return float(str(call.body["status"]).rpartition("q=")[2])
