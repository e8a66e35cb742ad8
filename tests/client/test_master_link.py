"""Pairing and config sync against a fake master at the wire (RAWP §3.3–§3.4, §4.1):
the real `rawp client pair` and `rawp client` processes, checked field by field."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import stat
import sys
from pathlib import Path

import aiohttp
import pytest

from client.link.auth import ClientAuth
from client.link.master import MasterLink, MasterLinkError, parse_pairing_url
from client.settings import ClientSettings
from client.state import StateDir
from rawp.config import DEFAULT_LIMITS, LIMIT_FIELDS
from rawp.tokens import SigningKey
from tests.client.fake_master import FakeMaster
from tests.client.harness import running_client
from tests.support import ROOT, free_port


@pytest.fixture
async def master():
    fake = FakeMaster()
    await fake.start()
    yield fake
    await fake.stop()


async def rawp(*args: str, env: dict | None = None) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "rawp_app.cli",
        *args,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), 60)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    return proc.returncode or 0, out.decode()


@contextlib.asynccontextmanager
async def serving_client(state: Path, port: int, tmp_path: Path):
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "rawp_app.cli",
        "client",
        "--dev",
        "--port",
        str(port),
        "--state-dir",
        str(state),
        "--allow-root",
        str(tmp_path),
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        async with aiohttp.ClientSession() as http:
            for _ in range(300):
                with contextlib.suppress(aiohttp.ClientError):
                    async with http.get(f"http://127.0.0.1:{port}/v1/health"):
                        break
                assert proc.returncode is None, "rawp client exited"
                await asyncio.sleep(0.05)
            yield proc, http
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), 10)
        except TimeoutError:
            os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()


async def test_pair_then_serve_syncs_both_scopes_and_accepts_the_master(master, tmp_path):
    state = tmp_path / "state"
    port = free_port()
    address = f"http://127.0.0.1:{port}"
    code, out = await rawp(
        "client",
        "pair",
        master.pairing_url,
        "--name",
        "laptop",
        "--dev",
        "--state-dir",
        str(state),
        "--public-address",
        address,
    )
    assert code == 0, out
    assert master.node_id in out
    body = master.pair_body
    assert body["pairing_token"] == master.pairing_token
    assert body["client_address"] == address and body["device_name"] == "laptop"
    creds = body["client_credentials"]
    assert creds["expires_in"] > 0 and creds["refresh_token"] and creds["access_token"]
    # C-CFG-01/02: right after pairing, both scopes at version 1, full snapshots, with bearer.
    (limits,), (caps,) = master.puts("limits"), master.puts("capabilities")
    assert limits["config_version"] == 1 and set(limits["limits"]) == set(LIMIT_FIELDS)
    assert caps["config_version"] == 1 and "rawp_dps_1.0" in caps["capabilities"]
    assert "agent_kind.script" in caps["capabilities"]  # the demo agent's kind (no agents file)
    for name in ("credentials.json", "client_key.pem"):  # secrets are 0600
        assert stat.S_IMODE((state / name).stat().st_mode) == 0o600
    assert master.pairing_token not in (state / "credentials.json").read_text()

    async with serving_client(state, port, tmp_path) as (_proc, http):
        for _ in range(300):  # C-CFG-01: a restart syncs both scopes again, at version 1
            if len(master.puts("capabilities")) == 2:
                break
            await asyncio.sleep(0.05)
        assert [b["config_version"] for b in master.puts("limits")] == [1, 1]
        assert [b["config_version"] for b in master.puts("capabilities")] == [1, 1]
        headers = {"Authorization": f"Bearer {creds['access_token']}"}
        async with http.get(f"{address}/v1/health", headers=headers) as resp:
            assert resp.status == 200 and (await resp.json())["status"] == "online"
        async with http.post(
            f"{address}/v1/auth/refresh", json={"refresh_token": creds["refresh_token"]}
        ) as resp:
            assert resp.status == 200
            fresh = await resp.json()
        async with http.get(
            f"{address}/v1/agents", headers={"Authorization": f"Bearer {fresh['access_token']}"}
        ) as resp:
            assert resp.status == 200


async def test_pairing_refuses_a_master_token_that_does_not_verify(master, tmp_path):
    master.sign_with = SigningKey.generate()
    state = tmp_path / "state"
    code, out = await rawp("client", "pair", master.pairing_url, "--dev", "--state-dir", str(state))
    assert code == 2 and "does not verify" in out and "Traceback" not in out
    saved = state / "credentials.json"
    assert not saved.exists() or json.loads(saved.read_text())["access_token"] is None
    assert master.puts("limits") == []


@pytest.mark.parametrize(
    "url, problem",
    [
        ("ftp://x/v1/auth/pair?token=" + "a" * 40, "https://"),
        ("https://master.example/v1/auth/pair", "no pairing token"),
        ("https://master.example/v1/auth/pair?token=short", "no pairing token"),
    ],
)
def test_bad_pairing_urls(url, problem):
    with pytest.raises(MasterLinkError, match=problem):
        parse_pairing_url(url, dev=False)


def test_http_pairing_url_needs_dev():
    url = "http://m:1/v1/auth/pair?token=" + "a" * 43
    with pytest.raises(MasterLinkError, match="--dev"):
        parse_pairing_url(url, dev=False)
    assert parse_pairing_url(url, dev=True) == ("http://m:1", "a" * 43)


async def paired_link(master: FakeMaster, tmp_path: Path) -> MasterLink:
    settings = ClientSettings(state_dir=tmp_path / "state", allowed_roots=[tmp_path], dev=True)
    state = StateDir.open(settings.state_dir)
    link = MasterLink(state, settings)
    await link.pair(master.pairing_url, "box", ClientAuth(state, 60).issue())
    return link


async def test_409_adopts_current_version_plus_one(master, tmp_path):
    link = await paired_link(master, tmp_path)
    try:
        master.refusals.append(
            (
                "limits",
                409,
                {
                    "error_code": "CONFIG_VERSION_CONFLICT",
                    "message": "old",
                    "current_config_version": 7,
                },
            )
        )
        await link.change_limits(DEFAULT_LIMITS.model_copy(update={"rate_limit": 10}))
        assert [b["config_version"] for b in master.puts("limits")] == [1, 2, 8]  # K-02
        assert master.puts("limits")[-1]["limits"]["rate_limit"] == 10
        assert link.pinned().limits_version == 8
        assert len(master.puts("capabilities")) == 1  # C-CFG-03: the other scope is untouched
    finally:
        await link.close()


async def test_runtime_changes_bump_only_their_scope_and_skip_no_ops(master, tmp_path):
    link = await paired_link(master, tmp_path)
    try:
        await link.change_capabilities(("rawp_dps_1.0", "vision_v1"), reason="plugin_loaded")
        await link.change_capabilities(("rawp_dps_1.0", "vision_v1"))  # unchanged: not sent
        await link.change_limits(DEFAULT_LIMITS)  # unchanged: not sent
        caps = master.puts("capabilities")
        assert [b["config_version"] for b in caps] == [1, 2]
        assert caps[-1]["reason"] == "plugin_loaded" and "vision_v1" in caps[-1]["capabilities"]
        assert [b["config_version"] for b in master.puts("limits")] == [1]
    finally:
        await link.close()


async def test_401_refreshes_once_and_retries_with_the_new_token(master, tmp_path, caplog):
    link = await paired_link(master, tmp_path)
    try:
        old_refresh = master.refresh_token
        old_access = link.state.credentials.access_token
        master.refusals.append(("limits", 401, {"error_code": "TOKEN_EXPIRED", "message": "x"}))
        master.warning = '299 - "Deprecated: Use PUT /v1/nodes/config/limits"'
        with caplog.at_level("WARNING"):
            await link.change_limits(DEFAULT_LIMITS.model_copy(update={"rate_limit": 9}))
        refreshes = [b for m, p, b, _ in master.received if p == "/v1/auth/refresh"]
        assert refreshes == [{"refresh_token": old_refresh}]
        tokens = [t for m, p, _, t in master.received if m == "PUT" and p.endswith("limits")]
        assert tokens[-2] == f"Bearer {old_access}"
        assert tokens[-1] == f"Bearer {link.state.credentials.access_token}" != tokens[-2]
        saved = json.loads((tmp_path / "state" / "credentials.json").read_text())
        assert saved["refresh_token"] == master.refresh_token != old_refresh
        assert "Deprecated" in caplog.text  # X-COMP-03
        assert old_access not in caplog.text  # no token in a log line
    finally:
        await link.close()


async def test_a_second_401_is_an_error_not_a_loop(master, tmp_path):
    link = await paired_link(master, tmp_path)
    try:
        for _ in range(2):
            master.refusals.append(("limits", 401, {"error_code": "TOKEN_EXPIRED", "message": "x"}))
        with pytest.raises(MasterLinkError, match="401"):
            await link.change_limits(DEFAULT_LIMITS.model_copy(update={"rate_limit": 8}))
        assert len([1 for _, p, _, _ in master.received if p == "/v1/auth/refresh"]) == 1
    finally:
        await link.close()


async def test_unpair_deletes_the_node_and_forgets_the_credentials(master, tmp_path):
    link = await paired_link(master, tmp_path)
    try:
        token = link.state.credentials.access_token
        await link.unpair()
        assert master.received[-1][:2] == ("DELETE", "/v1/nodes/self")
        assert master.received[-1][3] == f"Bearer {token}"
        saved = json.loads((tmp_path / "state" / "credentials.json").read_text())
        assert saved["access_token"] is None and saved["client_refresh_fingerprint"] is None
        with pytest.raises(MasterLinkError, match="not paired"):
            await link.unpair()
    finally:
        await link.close()


async def test_a_client_started_while_the_master_is_down_syncs_once_it_is_back(master, tmp_path):
    link = await paired_link(master, tmp_path)
    await link.close()
    await master.stop()
    before = len(master.puts("limits"))
    async with running_client(tmp_path):  # same state dir: paired, master unreachable
        await asyncio.sleep(0.3)
        assert len(master.puts("limits")) == before
        await master.start()  # the same port again
        for _ in range(400):
            if len(master.puts("capabilities")) > 1:
                break
            await asyncio.sleep(0.02)
        assert [b["config_version"] for b in master.puts("limits")][before:] == [1]
        assert len(master.puts("capabilities")) == 2


async def test_sessions_keep_the_limits_they_were_started_with(master, tmp_path):
    link = await paired_link(master, tmp_path)
    await link.close()
    async with running_client(tmp_path) as client:
        for _ in range(400):  # the start-up sync (version 1) has happened
            if len(master.puts("capabilities")) == 2:
                break
            await asyncio.sleep(0.02)
        first = await client.init()
        wider = client.services.link.limits.model_copy(update={"max_frame_size": 4096})
        await client.services.link.change_limits(wider, reason="test")
        assert master.puts("limits")[-1]["config_version"] == 2
        second = await client.init()
        sessions = client.services.sessions.sessions
        old, new = sessions[first["session_id"]].pinned, sessions[second["session_id"]].pinned
        assert (old.limits_version, old.limits.max_frame_size) == (1, DEFAULT_LIMITS.max_frame_size)
        assert (new.limits_version, new.limits.max_frame_size) == (2, 4096)


def test_pairing_while_listening_everywhere_needs_a_public_address(tmp_path, processes):
    url = "https://master.example/v1/auth/pair?token=" + "a" * 43
    proc = processes.rawp("client", "--host", "0.0.0.0", "pair", url, "--state-dir", str(tmp_path))
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 2 and b"--public-address" in out
