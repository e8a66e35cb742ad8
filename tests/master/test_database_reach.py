"""A master that cannot use its database says so in one line (issue 34 §2): a real `rawp master`
against a real PostgreSQL, reached through a TCP forwarder the test can cut (tests/edge/proxy).

- At start: unreachable, a name that does not resolve, authentication failed, a missing
  database — each one line naming host, port and database, never the password, no traceback,
  no "listening", no "could not listen", a non-zero exit.
- A database that comes up while the master waits: the master starts and serves.
- A running master whose database goes away and comes back: one line each way, not a
  traceback per takeover sweep.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys

import aiohttp
import pytest
from hypothesis import given
from hypothesis import strategies as st

from runtime.database_reach import describe, where
from tests.edge.proxy import CuttableProxy
from tests.scale.conftest import REDIS_URL, redis_prefix  # noqa: F401 (a fixture)
from tests.support import ROOT, Lines, free_port, missing_service

PASSWORD = "s3cret-Pa55word"
LISTENING = re.compile(r"listening on")


@pytest.fixture
def pg(postgres_url):
    """(admin URL parts) of the session's test database, or a skip saying why there is none."""
    url, reason = postgres_url
    if url is None:
        missing_service(f"PostgreSQL: {reason}")  # under CI an error, not a skip
    return url


def _url(pg: str, *, port: int | None = None, user: str | None = None, name: str | None = None):
    """`pg` with another port, user (given the test's password) or database name."""
    from sqlalchemy.engine import make_url

    parsed = make_url(pg)
    changed = parsed.set(
        port=port or parsed.port or 5432,
        username=user or parsed.username,
        password=PASSWORD,
        database=name or parsed.database,
    )
    return changed.render_as_string(hide_password=False)


def _start_fails(tmp_path, url: str, wait: str = "1") -> str:
    result = subprocess.run(
        [
            *(sys.executable, "-m", "rawp_app.cli", "master", "--state-dir", str(tmp_path)),
            *("--port", str(free_port()), "--database-url", url),
        ],
        env={**os.environ, "RAWP_DATABASE_WAIT": wait},  # as compose would set it
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "Traceback" not in output and "could not listen" not in output, output
    assert not LISTENING.search(output), output
    assert PASSWORD not in output
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("rawp master: cannot use the database at "), output
    return last


def test_nothing_listening_is_one_line(tmp_path, pg):
    port = free_port()
    last = _start_fails(tmp_path, _url(pg, port=port))
    assert f"127.0.0.1:{port}/" in last and "unreachable" in last and "waited 1 s" in last


def test_a_name_that_does_not_resolve_is_one_line(tmp_path, pg):
    url = _url(pg).replace("127.0.0.1", "rawp-no-such-host.invalid")
    last = _start_fails(tmp_path, url)
    assert "rawp-no-such-host.invalid:" in last and "name not resolved" in last


def test_authentication_failed_stops_at_once(tmp_path, pg):
    last = _start_fails(tmp_path, _url(pg, user="rawp_no_such_role"), wait="600")
    assert "authentication failed (user rawp_no_such_role)" in last


def test_a_missing_database_stops_at_once(tmp_path, pg):
    last = _start_fails(tmp_path, _url(pg, name="rawp_no_such_db"), wait="600")
    assert "/rawp_no_such_db: database missing" in last


async def _health(port: int) -> int:
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"http://127.0.0.1:{port}/v1/health") as response,
    ):
        return response.status


async def test_waits_for_its_database_then_serves(processes, tmp_path, pg):
    gate = CuttableProxy(_port_of(pg))
    gate.partition()  # the database is not up yet (compose started the master first)
    port = free_port()
    proc = processes.rawp(
        *("master", "--state-dir", str(tmp_path), "--port", str(port)),
        *("--database-url", _url(pg, port=gate.port)),
        env={"RAWP_DATABASE_WAIT": "60"},
    )
    lines = Lines(proc.stdout)
    try:
        await lines.wait_for(re.compile(r"waiting up to 60 s for the database at 127\.0\.0\.1"))
        assert not any(LISTENING.search(line) for line in lines.lines)
        gate.heal()
        await lines.wait_for(LISTENING)
        assert await _health(port) == 200
    finally:
        gate.close()
    assert "Traceback" not in "".join(lines.lines)


async def test_an_outage_while_running_is_two_lines(processes, tmp_path, pg, redis_prefix):  # noqa: F811
    """With Redis (compose, replicas) the takeover sweep runs every 0.2 s here: while the
    database is away it says so once, and once when it is back."""
    gate = CuttableProxy(_port_of(pg))
    port = free_port()
    proc = processes.rawp(
        *("master", "--state-dir", str(tmp_path), "--port", str(port)),
        *("--database-url", _url(pg, port=gate.port), "--takeover-sweep-seconds", "0.2"),
        *("--redis-url", REDIS_URL, "--redis-prefix", redis_prefix[1]),
    )
    lines = Lines(proc.stdout)
    try:
        await lines.wait_for(LISTENING)
        gate.partition()
        await lines.wait_for(re.compile(r"takeover sweep: cannot use the database at 127\.0\."))
        assert await _health(port) == 503  # DATABASE_UNAVAILABLE, as before
        await asyncio.sleep(0)
        gate.heal()
        await lines.wait_for(re.compile(r"the takeover sweep works again"))
        assert await _health(port) == 200
    finally:
        gate.close()
    text = "".join(lines.lines)
    assert "Traceback" not in text and "sweep failed" not in text, text
    assert len([line for line in lines.lines if "takeover sweep" in line]) == 2, text


def _port_of(pg: str) -> int:
    from sqlalchemy.engine import make_url

    return make_url(pg).port or 5432


@given(st.text(min_size=1, max_size=40))
def test_a_line_never_shows_the_password(password):
    from sqlalchemy.engine import URL

    url = URL.create(
        "postgresql+asyncpg", username="rawp", password=password, host="db", database="rawp"
    )
    text = url.render_as_string(hide_password=False)
    line = describe(text, ConnectionRefusedError(111, "Connect call failed"))
    assert line == "cannot use the database at db:5432/rawp: unreachable (connection refused)"
    assert where(text) == "db:5432/rawp"
