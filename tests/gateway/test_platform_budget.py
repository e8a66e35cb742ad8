"""The shared platform budget (issue 19 §5): buckets, priorities, coalescing, dropping, order.

The Redis buckets run against the machine's Redis (a unique prefix per test, deleted after);
"replicas" are two budget objects on the same prefix. gateway.replicas.platform_budget and
gateway.replicas.budget_queue say the rules checked here.
"""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters.discord.routes import ROUTES as DISCORD_ROUTES
from adapters.slack.routes import ROUTES as SLACK_ROUTES
from gateway.replicas.budget_queue import BudgetQueue
from gateway.replicas.platform_budget import (
    GLOBAL,
    Limit,
    MemoryBuckets,
    Priority,
    Spend,
    blocked_key,
    parse_limits,
    routes_of,
    spends,
)
from gateway.replicas.redis_budget import RedisBuckets
from rawp.clock import FakeClock
from runtime.tasks import TaskOwner
from tests.runtime.bucket_support import in_both_homes, replay
from tests.scale.conftest import redis_prefix  # noqa: F401  (the fixture)

ROUTES = {
    GLOBAL: Limit(50.0, 50),
    "message.create": Limit(1.0, 5, per_channel=True),
    "reaction": Limit(4.0, 1, per_channel=True),
}


def test_spends_name_the_route_its_scope_and_the_global_bucket():
    found = spends(ROUTES, "discord", "message.create", "42")
    assert [s.key for s in found] == ["discord:message.create:42", "discord:global"]
    assert [blocked_key(s) for s in found] == ["discord:message.create", "discord:global"]
    assert spends(ROUTES, "discord", "no.such.route", "42") == ()


def test_operator_overrides_replace_a_rate_and_keep_the_scope():
    overrides = parse_limits(" global=5/s , chat.postMessage=2/s,")
    slack = routes_of(SLACK_ROUTES.limits, overrides)
    assert slack["chat.postMessage"] == Limit(2.0, 2, per_channel=True)
    assert slack["chat.update"] == SLACK_ROUTES.limits["chat.update"]
    assert "global" not in slack  # Slack has no platform-wide limit unless the table says so
    every = parse_limits("*=1000/s")
    assert routes_of(DISCORD_ROUTES.limits, every)["reaction"] == Limit(1000.0, 1000, True)
    known = {*DISCORD_ROUTES.limits, *SLACK_ROUTES.limits}
    for wrong in ("chat.post=2/s", "global", "global=fast", "=2/s"):
        with pytest.raises(ValueError):
            parse_limits(wrong, known)
    for wrong in ("global", "global=fast", "=2/s", "chat post=2/s"):  # no table: the form only
        with pytest.raises(ValueError):
            parse_limits(wrong)
    assert parse_limits("chat.post=2/s", known=None)  # a route's name is checked at launch


def test_a_reserve_is_never_larger_than_the_bucket():
    one = Limit(4.0, 1)
    assert {one.need(p) for p in Priority} == {1.0}  # a bucket of one: every priority needs it
    five = Limit(1.0, 5)
    assert five.need(Priority.ANSWER) < five.need(Priority.CHUNK) < five.need(Priority.STATUS)
    assert five.need(Priority.STATUS) <= 5


# --- the Redis buckets answer as the memory buckets do ------------------------------------

_SPENDS = [
    spends(ROUTES, "discord", "message.create", "1"),
    spends(ROUTES, "discord", "message.create", "2"),
    spends(ROUTES, "discord", "reaction", "1"),
]
_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("take"), st.integers(0, 2), st.sampled_from(list(Priority))),
        st.tuples(st.just("advance"), st.sampled_from([0.0, 0.1, 0.25, 0.7, 1.5])),
        st.tuples(st.just("block"), st.integers(0, 2), st.sampled_from([0.2, 1.0])),
    ),
    max_size=30,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=_OPS)
def test_redis_and_memory_buckets_give_the_same_answers(ops):
    answers = replay(
        ops,
        lambda buckets, op: buckets.take(_SPENDS[op[1]], op[2]),
        lambda buckets, op: buckets.block(blocked_key(_SPENDS[op[1]][0]), op[2]),
    )
    memory, redis = in_both_homes(MemoryBuckets, RedisBuckets, answers)
    assert memory == redis


async def test_status_keeps_a_reserve_an_answer_on_another_replica_may_spend(redis_prefix):  # noqa: F811
    client, prefix = redis_prefix
    clock = FakeClock()
    one, other = RedisBuckets(client, prefix, clock), RedisBuckets(client, prefix, clock)
    bucket = (Spend("slack:chat.postMessage", Limit(1.0, 5)),)
    # STATUS needs 3 tokens in the bucket: 5 → 4 → 3 → 2, then it waits.
    waits = [await one.take(bucket, Priority.STATUS) for _ in range(4)]
    assert waits[:3] == [0.0, 0.0, 0.0] and waits[3] > 0
    assert await other.take(bucket, Priority.CHUNK) == 0.0  # 2 ≥ 1.8
    assert await other.take(bucket, Priority.CHUNK) > 0  # 1 < 1.8
    assert await other.take(bucket, Priority.ANSWER) == 0.0  # the last token: an answer's
    assert await other.take(bucket, Priority.ANSWER) > 0


async def test_a_429_blocks_the_route_for_every_replica(redis_prefix):  # noqa: F811
    client, prefix = redis_prefix
    clock = FakeClock()
    one, other = RedisBuckets(client, prefix, clock), RedisBuckets(client, prefix, clock)
    where = spends(ROUTES, "discord", "message.create", "7")
    await one.block("discord:message.create", 2.0)
    assert 1.9 < await other.take(where, Priority.ANSWER) <= 2.0
    assert await other.take(spends(ROUTES, "discord", "reaction", "7"), Priority.STATUS) == 0.0
    clock.advance(2.0)
    assert await other.take(where, Priority.ANSWER) == 0.0


# --- the queue of one replica ---------------------------------------------------------------


async def test_an_answer_goes_before_status_updates_queued_on_another_replica(redis_prefix):  # noqa: F811
    client, prefix = redis_prefix
    bucket = (Spend("slack:global", Limit(0.01, 4)),)  # no refill within the test
    async with TaskOwner("replica a") as a_tasks, TaskOwner("replica b") as b_tasks:
        a = BudgetQueue(RedisBuckets(client, prefix), a_tasks, late_s=60)
        b = BudgetQueue(RedisBuckets(client, prefix), b_tasks, late_s=60)
        order: list[str] = []
        two_went = asyncio.Event()

        async def status(i: int) -> None:
            if await a.admit(bucket, Priority.STATUS, f"conversation {i}", (i, "status")):
                order.append(f"status {i}")
                if len(order) == 2:
                    two_went.set()

        statuses = [asyncio.create_task(status(i)) for i in range(10)]
        await two_went.wait()  # 4 → 2 tokens left, under the status reserve: eight wait
        assert a.waiting() == 8
        async with asyncio.timeout(10):  # a hang guard: with no reserve it would wait ~50 s
            assert await b.admit(bucket, Priority.ANSWER, "approval") is True
        order.append("answer")
        assert a.waiting() == 8  # the answer did not wait for any of them
        for task in statuses:
            task.cancel()
        await asyncio.gather(*statuses, return_exceptions=True)
    assert order.index("answer") == 2


async def test_a_newer_status_replaces_a_waiting_one_and_a_late_one_is_dropped():
    clock = FakeClock()
    buckets = MemoryBuckets(clock)  # never refilled unless the test moves its clock
    bucket = (Spend("slack:assistant.threads.setStatus", Limit(1.0, 1)),)
    async with TaskOwner("replica") as tasks:
        queue = BudgetQueue(buckets, tasks, late_s=3.0, clock=clock.monotonic)
        assert await queue.admit(bucket, Priority.STATUS, "c", ("c", "status")) is True
        older = asyncio.create_task(queue.admit(bucket, Priority.STATUS, "c", ("c", "status")))
        await asyncio.sleep(0)
        newer = asyncio.create_task(queue.admit(bucket, Priority.STATUS, "c", ("c", "status")))
        assert await older is False  # coalesced: the newer one stands for it
        chunk = asyncio.create_task(queue.admit(bucket, Priority.CHUNK, "c"))
        clock.advance(3.5)  # the status is late when the chunk's arrival wakes the lane
        assert await newer is False
        assert await chunk is True


@settings(max_examples=30, deadline=None)
@given(
    calls=st.lists(
        st.tuples(st.integers(0, 2), st.sampled_from([Priority.ANSWER, Priority.CHUNK])),
        min_size=1,
        max_size=25,
    ),
    storms=st.lists(st.floats(0.001, 0.02), max_size=4),
)
def test_content_keeps_its_order_per_conversation_under_a_429_storm(calls, storms):
    """Content of three conversations queued in a random interleaving, while 429s keep
    blocking the route: every call goes, and each conversation's in the order queued."""

    async def run() -> list[tuple[int, int]]:
        buckets = MemoryBuckets()
        bucket = (Spend("discord:message.create:1", Limit(500.0, 2)),)
        sent: list[tuple[int, int]] = []
        async with TaskOwner("replica") as tasks:
            queue = BudgetQueue(buckets, tasks)

            async def post(n: int, conversation: int, priority: Priority) -> None:
                assert await queue.admit(bucket, priority, conversation) is True
                sent.append((conversation, n))

            async def storm() -> None:
                for seconds in storms:
                    await buckets.block("discord:message.create", seconds)
                    await asyncio.sleep(seconds / 2)

            posts = [post(n, c, p) for n, (c, p) in enumerate(calls)]
            await asyncio.gather(storm(), *posts)
        return sent

    sent = asyncio.run(run())
    assert sorted(sent) == sorted((c, n) for n, (c, _) in enumerate(calls))  # none lost
    for conversation in range(3):
        mine = [n for c, n in sent if c == conversation]
        assert mine == sorted(mine)  # never reordered within a conversation


# --- a 429 from the platform: waited out by the library, shared through Redis, nothing lost --


async def test_a_429_storm_delays_but_never_loses_or_reorders_an_answer(redis_prefix):  # noqa: F811
    import aiohttp

    from adapters.call_labels import slack_label
    from adapters.slack.platform import SlackPlatform, web_client
    from gateway.metrics import GatewayMetrics
    from gateway.platform import ConversationRef
    from gateway.replicas.budgeted_platform import PlatformBudget, block_on_429
    from gateway.replicas.platform_budget import call_priority
    from tests.fakes.slack_server import FakeSlack

    client, prefix = redis_prefix
    metrics = GatewayMetrics()
    budget = PlatformBudget(RedisBuckets(client, prefix))
    other_replica = RedisBuckets(client, prefix)
    metrics.rate_limit_listeners.append(block_on_429(budget))
    async with FakeSlack() as slack, budget.tasks:
        slack.rate_limit("chat.postMessage", times=2, retry_after=1)
        trace = metrics.platform_trace("slack", slack_label)
        async with aiohttp.ClientSession(trace_configs=[trace]) as session:
            api = web_client(slack.world.bot_token, slack.api_base_url, session=session)
            platform = budget.wrap(SlackPlatform(api))
            threads = [
                ConversationRef("slack", slack.world.channel_id, f"{n}.0001") for n in (1, 2)
            ]

            async def answer(thread: ConversationRef) -> None:
                for i in range(3):
                    await platform.send_message(thread, f"{thread.thread_id} chunk {i}")
                with call_priority(Priority.ANSWER):
                    await platform.send_message(thread, f"{thread.thread_id} last")

            posting = asyncio.gather(*(answer(t) for t in threads))
            await slack.log.wait_for_call("POST", "chat.postMessage", timeout=10, where=_refused)
            channel = slack.world.channel_id
            where = spends(SLACK_ROUTES.limits, "slack", "chat.postMessage", channel)
            waits = []
            for _ in range(200):  # the listener runs as slack_sdk reads the 429 answer
                waits.append(await other_replica.take(where, Priority.ANSWER))
                if waits[-1] > 0:
                    break
                await asyncio.sleep(0.01)
            await posting
    assert waits[-1] > 0, "the 429 did not block the route for the other replica"
    posted = [str(c.body["text"]) for c in slack.ok_calls("chat.postMessage")]
    for thread in ("1.0001", "2.0001"):
        mine = [text for text in posted if text.startswith(thread)]
        assert mine == [f"{thread} chunk {i}" for i in range(3)] + [f"{thread} last"]


def _refused(call) -> bool:
    return call.status == 429


def test_a_429_names_the_route_it_blocks():
    from adapters.call_labels import discord_route, slack_method
    from gateway.replicas.budgeted_platform import asked_wait

    def discord(method: str, path: str, **headers: str) -> str | None:
        return DISCORD_ROUTES.blocked_route(discord_route(method, "/api/v10" + path), headers)

    assert discord("POST", "/channels/1/messages") == "discord:message.create"
    assert discord("PATCH", "/channels/1/messages/2") == "discord:message.edit"
    assert discord("PUT", "/channels/1/messages/2/reactions/%E2%9C%85/@me") == "discord:reaction"
    assert discord("POST", "/channels/1/typing") == "discord:typing"
    assert discord("POST", "/channels/1/messages", **{"X-RateLimit-Global": "true"}) == (
        "discord:global"
    )
    assert discord("GET", "/users/@me") is None  # not budgeted: nothing to block
    slack = slack_method("/api/chat.postMessage")
    assert SLACK_ROUTES.blocked_route(slack, {}) == "slack:chat.postMessage"
    assert SLACK_ROUTES.blocked_route("files.getUploadURLExternal", {}) == "slack:files.upload"
    assert SLACK_ROUTES.blocked_route("auth.test", {}) is None  # not budgeted
    assert asked_wait({"X-RateLimit-Reset-After": "0.25", "Retry-After": "1"}) == 0.25
    assert asked_wait({"Retry-After": "3"}) == 3.0


async def test_through_the_slack_platform_an_answer_passes_statuses_that_keep_a_reserve():
    from adapters.slack.platform import SlackPlatform, web_client
    from gateway.platform import ConversationRef
    from gateway.replicas.budgeted_platform import PlatformBudget
    from gateway.replicas.platform_budget import call_priority
    from tests.fakes.slack_server import FakeSlack

    routes = {  # a shared bucket of 3 that does not refill within the test
        GLOBAL: Limit(0.001, 3),
        "chat.postMessage": Limit(100.0, 100),
        "assistant.threads.setStatus": Limit(100.0, 100),
    }
    budget = PlatformBudget(MemoryBuckets())
    async with FakeSlack() as slack, budget.tasks:
        api = web_client(slack.world.bot_token, slack.api_base_url)
        platform = budget.wrap(SlackPlatform(api), routes)
        where = [ConversationRef("slack", slack.world.channel_id, f"{n}.0001") for n in range(5)]
        statuses = [asyncio.create_task(platform.set_status(c, "thinking")) for c in where]
        await asyncio.gather(*statuses[:2])  # 3 → 1 token: under the status reserve (2)
        typing = asyncio.create_task(platform.trigger_typing(where[2]))
        await statuses[2]  # replaced by the newer status of its conversation: no call
        chunk = asyncio.create_task(platform.send_message(where[3], "a chunk"))  # needs 1.4
        with call_priority(Priority.ANSWER):
            await platform.send_message(where[4], "the answer")  # the last token is its
        for waiting in (typing, *statuses[3:], chunk):
            assert not waiting.done()
            waiting.cancel()
        await asyncio.gather(typing, chunk, *statuses[3:], return_exceptions=True)
    assert len(slack.calls("assistant.threads.setStatus")) == 2
    assert [str(c.body["text"]) for c in slack.calls("chat.postMessage")] == ["the answer"]
