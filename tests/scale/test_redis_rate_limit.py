"""`RedisRateLimiter` against the real Redis: one budget for every replica (issue 9, §7.1). That
it refuses exactly as the in-process limiter does: tests/runtime/test_token_buckets.py."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rawp.errors import ServiceUnavailable, TooManyRequests
from runtime.rate_limit import Budget
from runtime.redis_buckets import RedisRateLimiter
from tests.support import ROOT

SLOW = Budget.parse("3/h")  # burst 3, one more every 1200 s: nothing refills during a test


async def test_two_replicas_spend_one_budget(redis_prefix):
    client, prefix = redis_prefix
    a, b = RedisRateLimiter(client, prefix), RedisRateLimiter(client, prefix)
    await a.hit("node:n1", SLOW)
    await b.hit("node:n1", SLOW)
    await a.hit("node:n1", SLOW)
    for limiter in (a, b):
        with pytest.raises(TooManyRequests) as refused:
            await limiter.hit("node:n1", SLOW)
        assert refused.value.status == 429
        # The next token is about 1200 s away (a little less: Redis time moved on).
        assert 1100 < refused.value.retry_after <= 1200
        assert 1100 < int(refused.value.headers["Retry-After"]) <= 1200
    await b.hit("node:n2", SLOW)  # another key has its own budget


async def test_buckets_expire_once_full_again(redis_prefix):
    client, prefix = redis_prefix
    await RedisRateLimiter(client, prefix).hit("addr:10.0.0.1", Budget.parse("10/min"))
    ttl = await client.pttl(prefix + "addr:10.0.0.1")
    assert 0 < ttl <= 61_000  # refilled in 60 s, forgotten a second later


async def test_no_redis_is_a_clear_503():
    from redis.asyncio import Redis

    # Nothing listens on port 1: the limiter fails closed with RAWP's 503 body, not a trace.
    limiter = RedisRateLimiter(Redis(host="127.0.0.1", port=1, socket_connect_timeout=2))
    try:
        with pytest.raises(ServiceUnavailable) as refused:
            await limiter.hit("k", SLOW)
        assert refused.value.to_body()["error_code"] == "SERVICE_UNAVAILABLE"
    finally:
        await limiter.aclose()


def test_without_a_redis_url_the_master_never_imports_redis(tmp_path):
    """Rule one of issue 9: the single-process master builds its services without redis."""
    code = (
        "import asyncio, sys\n"
        "from pathlib import Path\n"
        "from master.settings import MasterSettings\n"
        "from master.wiring import build_services\n"
        "from rawp.clock import SYSTEM_CLOCK\n"
        "async def main():\n"
        f"    settings = MasterSettings(state_dir=Path({str(tmp_path)!r}))\n"
        "    s = await build_services(settings, SYSTEM_CLOCK)\n"
        "    print(type(s.limiter).__name__)\n"
        "    await s.close()\n"
        "asyncio.run(main())\n"
        "print(sorted(m for m in sys.modules if m == 'redis' or m.startswith('redis.')))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["MemoryRateLimiter", "[]"]
