"""The typing heartbeat refreshes inside the platform's expiry and stops at once."""

from __future__ import annotations

import itertools

import pytest

from adapters.discord.platform import DiscordPlatform
from adapters.slack.platform import SlackPlatform
from gateway.platform import PlatformLimits
from gateway.rendering.typing import TypingHeartbeat
from rawp.clock import FakeClock
from runtime.tasks import TaskOwner
from tests.gateway.support import ManualSleep, settle


@pytest.fixture
async def owner():
    """The heartbeat's owner, closed after the test: no heartbeat outlives it."""
    async with TaskOwner("typing") as tasks:
        yield tasks
    assert len(tasks) == 0


def test_refresh_interval_is_shorter_than_the_expiry():
    discord, slack = DiscordPlatform.limits, SlackPlatform.limits
    assert 3 <= discord.typing_refresh_s <= 5  # issue 10: every 3–5 s on Discord
    assert discord.typing_refresh_s < discord.typing_expiry_s
    assert slack.typing_refresh_s < slack.typing_expiry_s
    assert PlatformLimits(max_message_length=100).typing_refresh_s == 5.0


async def test_typing_is_refreshed_before_it_expires_and_never_after_stop(owner):
    clock = FakeClock()
    sleep = ManualSleep(clock)
    triggered: list[float] = []

    async def trigger():
        triggered.append(clock.monotonic())

    beat = TypingHeartbeat(trigger, DiscordPlatform.limits.typing_refresh_s, owner, sleep=sleep)
    start = clock.monotonic()
    await beat.start()
    await sleep.advance(60)
    assert triggered[0] == start  # typing shows at once (G-NS-04)
    gaps = [b - a for a, b in itertools.pairwise(triggered)]
    assert len(triggered) == 16  # 0, 4, …, 60
    assert all(gap < DiscordPlatform.limits.typing_expiry_s for gap in gaps)
    await beat.stop()
    assert not beat.running
    count = len(triggered)
    await sleep.advance(60)
    assert len(triggered) == count


async def test_a_failing_trigger_does_not_end_the_heartbeat(owner):
    clock = FakeClock()
    sleep = ManualSleep(clock)
    calls = []

    async def trigger():
        calls.append(1)
        raise OSError("platform down")

    beat = TypingHeartbeat(trigger, 4, owner, sleep=sleep)
    await beat.start()
    await sleep.advance(8)
    assert len(calls) == 3
    await beat.stop()


async def test_stop_from_its_own_tick_ends_it(owner):
    clock = FakeClock()
    sleep = ManualSleep(clock)
    ticks = []

    async def trigger():
        pass

    async def on_tick():
        ticks.append(clock.monotonic())
        if len(ticks) == 2:
            await beat.stop()

    beat = TypingHeartbeat(trigger, 4, owner, sleep=sleep, on_tick=on_tick)
    await beat.start()
    await sleep.advance(20)
    await settle()
    assert len(ticks) == 2
    assert not beat.running


async def test_start_twice_runs_one_heartbeat(owner):
    clock = FakeClock()
    sleep = ManualSleep(clock)
    calls = []

    async def trigger():
        calls.append(1)

    beat = TypingHeartbeat(trigger, 4, owner, sleep=sleep)
    await beat.start()
    await beat.start()
    await sleep.advance(4)
    assert len(calls) == 2
    await beat.stop()


def test_interval_must_be_positive():
    async def trigger():
        pass

    with pytest.raises(ValueError):
        TypingHeartbeat(trigger, 0, TaskOwner("typing"))
