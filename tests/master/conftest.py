"""Master fixtures: the same tests run on SQLite and on a real PostgreSQL.

PostgreSQL gets one fresh database per test session, created here and dropped at the end; each
test starts from empty tables. Where no PostgreSQL answers, its parameter is skipped with the
reason (a missing external service, the only honest skip), and fails under CI
(tests.support.missing_service).
"""

from __future__ import annotations

import asyncio
import os
import secrets
import socket
from typing import Any

import pytest
from sqlalchemy import text

from master.api.common import EXTENSION
from master.app import create_app
from master.settings import MasterSettings
from master.storage.schema import metadata
from rawp.clock import FakeClock, iso
from runtime.rate_limit import Budget
from tests.master.fake_client import FakeClient
from tests.support import missing_service, serving

ADMIN_URL = os.environ.get("RAWP_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
GENEROUS = Budget(per_second=1000.0, burst=1000)
GENEROUS_RATE = "1000/s"  # GENEROUS, as a setting writes it
# The names the master tests pair with, answered without /etc/hosts or the network (the
# resolver seam of master.services.addresses). 192.0.2.0/24 is TEST-NET-1: nothing is ever
# sent there, pairing only checks the answer.
FAKE_DNS = {"node.example": ["192.0.2.10", "2001:db8::10"], "localhost": ["127.0.0.1", "::1"]}


async def fake_resolve(host: str, port: int) -> list[str]:
    if host not in FAKE_DNS:
        raise socket.gaierror(socket.EAI_NONAME, f"{host} is not in the test's DNS")
    return FAKE_DNS[host]


async def _admin(sql: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(ADMIN_URL, timeout=3)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


@pytest.fixture(scope="session")
def postgres_url():
    """A fresh PostgreSQL database for this test session, or the reason there is none."""
    name = f"rawp_master_test_{secrets.token_hex(4)}"
    try:
        asyncio.run(_admin(f'CREATE DATABASE "{name}"'))
    except Exception as exc:  # no server, refused, no permission
        yield None, f"PostgreSQL at {ADMIN_URL} did not answer: {exc!r}"
        return
    base = ADMIN_URL.rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://", 1)
    yield f"{base}/{name}", None
    asyncio.run(_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request, tmp_path, postgres_url):
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'master-test.db'}"
    url, reason = postgres_url
    if url is None:
        missing_service(reason)
    return url


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def settings(tmp_path, database_url):
    return MasterSettings(
        state_dir=tmp_path / "state",
        database_url=database_url,
        public_url="https://master.example",
        node_rate_limit=GENEROUS_RATE,
        auth_rate_limit=GENEROUS_RATE,
    )


class Master:
    """A running master app under Quart's test client, with helpers for the common steps."""

    def __init__(self, app, client, clock: FakeClock) -> None:
        self.app = app
        self.client = client
        self.clock = clock

    @property
    def services(self):
        return self.app.extensions[EXTENSION]

    async def pairing_token(self, user: str = "discord:1") -> str:
        return (await self.services.pairing.issue(user)).token

    def pair_body(self, token: str, address: str = "https://node.example:8701", **extra) -> dict:
        return {
            "pairing_token": token,
            "client_address": address,
            "device_name": "laptop",
            "client_credentials": {
                "access_token": "client-access",
                "refresh_token": "client-refresh",
                "expires_in": 3600,
            },
            **extra,
        }

    async def pair(self, user: str = "discord:1", **body: Any) -> dict:
        token = await self.pairing_token(user)
        response = await self.client.post("/v1/auth/pair", json=self.pair_body(token, **body))
        assert response.status_code == 200, await response.get_data()
        return await response.get_json()

    def bearer(self, node: dict) -> dict[str, str]:
        return {"Authorization": f"Bearer {node['access_token']}"}

    def limits_body(self, version: int = 1, **limits: Any) -> dict:
        return {
            "config_version": version,
            "effective_at": iso(self.clock.now()),
            "reason": "test",
            "limits": {
                "rate_limit": 50,
                "max_frame_size": 65536,
                "reattach_window": 300,
                "max_buffer_size": 1048576,
                "buffer_overflow_policy": "RING",
                **limits,
            },
        }

    def capabilities_body(self, version: int = 1, capabilities=("vision_v1",)) -> dict:
        return {
            "config_version": version,
            "effective_at": iso(self.clock.now()),
            "capabilities": list(capabilities),
        }

    async def put(self, node: dict, scope: str, body: Any):
        return await self.client.put(
            f"/v1/nodes/config/{scope}", json=body, headers=self.bearer(node)
        )


async def _empty_tables(services) -> None:
    if services.db.is_sqlite:
        return  # a fresh file per test
    names = ", ".join(t.name for t in metadata.sorted_tables if t.name != "schema_version")
    async with services.db.begin() as conn:
        await conn.execute(text(f"TRUNCATE {names} CASCADE"))


@pytest.fixture
async def master(settings, clock):
    app = create_app(settings, clock)
    async with serving(app) as test_app:
        await _empty_tables(app.extensions[EXTENSION])
        app.extensions[EXTENSION].addresses.resolve = fake_resolve
        yield Master(app, test_app.test_client(), clock)


@pytest.fixture
async def fake_client():
    """A fake local client HTTP server on a loopback port (tests/master/fake_client.py)."""
    fake = await FakeClient().serve()
    yield fake
    await fake.close()


@pytest.fixture
async def dev_master(make_master):
    async with make_master(dev=True) as master:
        yield master


@pytest.fixture
def sleeps(clock):
    """A throttle sleep that records each wait and moves the fake clock instead of sleeping."""
    recorded: list[float] = []

    async def sleep(seconds: float) -> None:
        recorded.append(round(seconds, 6))
        clock.advance(seconds)

    sleep.recorded = recorded
    return sleep


def changed(settings, **overrides):
    """`settings` with some fields set anew, checked again as the model checks them."""
    return type(settings)(**{**dict(settings), **overrides})


@pytest.fixture
def make_master(settings, clock):
    """Start another master app with changed settings: `async with make_master(dev=True)`."""
    import contextlib

    @contextlib.asynccontextmanager
    async def start(**overrides):
        app = create_app(changed(settings, **overrides), clock)
        async with serving(app) as test_app:
            await _empty_tables(app.extensions[EXTENSION])
            app.extensions[EXTENSION].addresses.resolve = fake_resolve
            yield Master(app, test_app.test_client(), clock)

    return start
