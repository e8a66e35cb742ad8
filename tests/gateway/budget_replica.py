"""One gateway replica's platform calls, for tests/gateway/test_platform_budget_replicas.py.

`python -m tests.gateway.budget_replica ROLE API_BASE BOT_TOKEN REDIS_URL PREFIX CHANNEL` runs
a real `SlackPlatform` (slack_sdk, its session traced by GatewayMetrics as `rawp gateway` does)
behind `BudgetedPlatform`, spending the budget in Redis under PREFIX with the test's low limits
(`LOW_ROUTES`). Roles:

- `load:<name>`: a status update in each of STATUSES conversations, all queued at once, while
  two conversations post CHUNKS chunks each, one after the other (as a renderer posts).
- `approve`: waits for `go` on stdin, then posts one approval prompt.

Each line on stdout is JSON: `{"queued": <monotonic>}` when the approval is queued, then
`{"done": true}`. The statuses carry their queue time (`q=<monotonic>`); CLOCK_MONOTONIC is
one clock for every process on the machine, the test's fake records calls on it too.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

import aiohttp

from adapters.call_labels import slack_label
from adapters.slack.platform import SlackPlatform, web_client
from gateway.metrics import GatewayMetrics
from gateway.platform import ChoiceOption, ConversationRef, InteractionPrompt
from gateway.replicas.budgeted_platform import PlatformBudget, block_on_429
from gateway.replicas.platform_budget import GLOBAL, Limit
from gateway.replicas.redis_budget import RedisBuckets

# The injected low limits: every call of the bot shares GLOBAL; chat.postMessage is counted for
# the whole workspace here (not per channel) so chunks and the approval share it too.
LOW_ROUTES = {
    GLOBAL: Limit(5.0, 5),
    "chat.postMessage": Limit(3.0, 3),
    "assistant.threads.setStatus": Limit(5.0, 5),
}
STATUSES = 10
CHUNKS = 8


def say(**fields) -> None:
    print(json.dumps(fields), flush=True)


async def main(role: str, api_base: str, token: str, redis_url: str, prefix: str, channel: str):
    metrics = GatewayMetrics()
    # late_s: kept long, so every status queued is posted and the order can be checked.
    budget = PlatformBudget(RedisBuckets.from_url(redis_url, prefix), late_s=120.0)
    await budget.tasks.start()
    metrics.rate_limit_listeners.append(block_on_429(budget))
    session = aiohttp.ClientSession(trace_configs=[metrics.platform_trace("slack", slack_label)])
    platform = budget.wrap(SlackPlatform(web_client(token, api_base, session=session)), LOW_ROUTES)
    try:
        if role == "approve":
            await asyncio.to_thread(sys.stdin.readline)
            say(queued=time.monotonic())
            prompt = InteractionPrompt(
                "approval-1", "approval", "Run rm?", (ChoiceOption("allow", "Allow"),)
            )
            await platform.send_interaction(ConversationRef("slack", channel, "9.000001"), prompt)
        else:
            name = role.split(":", 1)[1]
            await asyncio.gather(
                *(status(platform, channel, name, i) for i in range(STATUSES)),
                *(chunks(platform, channel, name, c) for c in range(2)),
            )
    finally:
        await budget.close()
        await session.close()
    say(done=True)


async def status(platform, channel: str, name: str, i: int) -> None:
    conversation = ConversationRef("slack", channel, f"{name}{i}.000100")
    await platform.set_status(conversation, f"{name} s{i} q={time.monotonic():.6f}")


async def chunks(platform, channel: str, name: str, c: int) -> None:
    conversation = ConversationRef("slack", channel, f"{name}-chunks{c}.000200")
    for i in range(CHUNKS):
        await platform.send_message(conversation, f"{name} c{c} chunk {i}")


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:7]))
