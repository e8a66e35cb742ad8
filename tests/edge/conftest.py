"""Edge fixtures. `stack` runs one real master and one real client (processes, loopback,
`--dev`) for a whole test module; each test opens its own sessions on it."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from master.api.common import EXTENSION
from master.app import create_app
from master.settings import EdgeSettings, MasterSettings
from rawp.clock import SYSTEM_CLOCK, iso
from tests.edge.fake_client import FakeClient
from tests.edge.stack import running_stack
from tests.master import conftest as master_fixtures
from tests.support import serving

# The master suite's database fixtures: every unit test here runs on SQLite and PostgreSQL.
postgres_url = master_fixtures.postgres_url
database_url = master_fixtures.database_url
GENEROUS = master_fixtures.GENEROUS

OWNER = "discord:1001"


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    with running_stack(tmp_path_factory.mktemp("edge-stack"), OWNER) as made:
        yield made


# --- the master app under Quart's test client, with a fake client at the wire ----------------

SECRET = "unit-test-edge-secret-0123456789"


@pytest.fixture
def edge_settings(tmp_path, database_url):
    return MasterSettings(
        state_dir=tmp_path / "state",
        database_url=database_url,
        public_url="https://master.example",
        dev=True,
        node_rate_limit=master_fixtures.GENEROUS_RATE,
        auth_rate_limit=master_fixtures.GENEROUS_RATE,
        edge=EdgeSettings(
            secret=SECRET,
            user_budget=GENEROUS,
            deny_tools=("Bash",),
            deny_commands=("nuke",),
            dedupe_window=8,
            queue_bytes=64 * 1024,
            health_cache_seconds=0,
        ),
    )


class EdgeMaster:
    """The master app plus the calls an edge and a node make in these tests."""

    def __init__(self, app, client, clock=SYSTEM_CLOCK) -> None:
        self.app = app
        self.client = client
        self.clock = clock  # the master's: a config's effective_at is checked against it

    @property
    def services(self):
        return self.app.extensions[EXTENSION]

    async def token(self, subject: str) -> str:
        response = await self.client.post(
            "/v1/edge/auth/token",
            json={"subject": subject},
            headers={"Authorization": f"Bearer {SECRET}"},
        )
        assert response.status_code == 200, await response.get_data()
        return (await response.get_json())["access_token"]

    async def call(self, subject_or_token: str, method: str, path: str, body: Any = None):
        token = subject_or_token
        if ":" in subject_or_token and "." not in subject_or_token:
            token = await self.token(subject_or_token)
        kwargs: dict[str, Any] = {"headers": {"Authorization": f"Bearer {token}"}}
        if body is not None:
            kwargs["json"] = body
        response = await self.client.open(path, method=method, **kwargs)
        data = await response.get_data()
        return response.status_code, (await response.get_json() if data else None)

    async def node(self, user: str, address: str, *, synced: bool = True) -> dict:
        """Pair a node for `user` at `address`; sync both scopes unless told not to."""
        token = (await self.services.pairing.issue(user)).token
        body = {
            "pairing_token": token,
            "client_address": address,
            "device_name": f"box-of-{user}",
            "client_credentials": {
                "access_token": "client-access",
                "refresh_token": "client-refresh",
                "expires_in": 3600,
            },
        }
        response = await self.client.post("/v1/auth/pair", json=body)
        assert response.status_code == 200, await response.get_data()
        node = await response.get_json()
        if synced:
            now = iso(self.clock.now())
            headers = {"Authorization": f"Bearer {node['access_token']}"}
            limits = {
                "config_version": 1,
                "effective_at": now,
                "limits": {
                    "rate_limit": 1000,
                    "max_frame_size": 65536,
                    "reattach_window": 300,
                    "max_buffer_size": 1048576,
                    "buffer_overflow_policy": "RING",
                },
            }
            caps = {"config_version": 1, "effective_at": now, "capabilities": ["vision_v1"]}
            for scope, payload in (("limits", limits), ("capabilities", caps)):
                put = await self.client.put(
                    f"/v1/nodes/config/{scope}", json=payload, headers=headers
                )
                assert put.status_code == 200, await put.get_data()
        return node

    def websocket(self, session_id: str, ticket: str, **query: str):
        extra = "".join(f"&{k}={v}" for k, v in query.items())
        return self.client.websocket(
            f"/v1/edge/ws/stream?ticket={ticket}&session_id={session_id}{extra}",
            # Quart's test client drops `subprotocols=`; the ASGI scope carries them.
            scope_base={"subprotocols": ["rawp-dps-1.0"]},
        )


@pytest.fixture
def make_edge_master(edge_settings):
    @contextlib.asynccontextmanager
    async def start(clock=SYSTEM_CLOCK, **edge_overrides):
        edge = master_fixtures.changed(edge_settings.edge, **edge_overrides)
        settings = master_fixtures.changed(edge_settings, edge=edge)
        app = create_app(settings, clock)
        async with serving(app) as test_app:
            await master_fixtures._empty_tables(app.extensions[EXTENSION])
            yield EdgeMaster(app, test_app.test_client(), clock)

    return start


@pytest.fixture
async def edge_master(make_edge_master):
    async with make_edge_master() as master:
        yield master


@pytest.fixture
async def fake_client():
    fake = await FakeClient().serve()
    yield fake
    await fake.close()
