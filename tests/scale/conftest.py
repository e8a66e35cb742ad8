"""Scale-out fixtures: the machine's real Redis (a unique key prefix per test, deleted after)
and a fresh PostgreSQL database (tests/master/conftest.py). Where either service does not
answer, the test is skipped with the reason printed — under CI it fails instead
(tests.support.missing_service)."""

from __future__ import annotations

import asyncio
import os
import secrets

import pytest

from tests.master import conftest as master_fixtures
from tests.support import Processes, missing_service

REDIS_URL = os.environ.get("RAWP_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")

postgres_url = master_fixtures.postgres_url


@pytest.fixture
async def redis_prefix():
    """(client, prefix): a Redis client and a key prefix no other test uses; keys under it
    are deleted after the test."""
    from redis.asyncio import Redis

    client = Redis.from_url(REDIS_URL, socket_timeout=5, socket_connect_timeout=3)
    try:
        await asyncio.wait_for(client.ping(), 5)
    except Exception as exc:
        await client.aclose()
        missing_service(f"Redis at {REDIS_URL} did not answer: {exc!r}")
    prefix = f"rawp-test:{secrets.token_hex(6)}:"
    try:
        yield client, prefix
    finally:
        keys = [key async for key in client.scan_iter(match=prefix + "*")]
        if keys:
            await client.delete(*keys)
        await client.aclose()


@pytest.fixture
def pg_url(postgres_url):
    url, reason = postgres_url
    if url is None:
        missing_service(reason)
    return url


@pytest.fixture
def processes():
    """Real child processes, every one ended after the test."""
    made = Processes()
    yield made
    made.close()
