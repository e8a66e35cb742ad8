"""The real `rawp master` process on a loopback port: pairing over real HTTP, restarts, TLS."""

from __future__ import annotations

import asyncio
import ssl
import stat
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest

from master.services.keys import KEY_FILE
from tests.support import ROOT, free_port, self_signed_certificate, wait_for_http


def _master_args(state_dir: Path, database_url: str, port: int) -> list[str]:
    return [
        "master",
        "--port",
        str(port),
        "--state-dir",
        str(state_dir),
        "--database-url",
        database_url,
    ]


def _pairing_url(state_dir: Path, database_url: str, port: int, public: str) -> str:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "rawp_app.cli",
            *_master_args(state_dir, database_url, port),
            "--public-url",
            public,
            "pairing-url",
            "--user",
            "local:me",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def _pair_body(token: str, address: str) -> dict:
    return {
        "pairing_token": token,
        "client_address": address,
        "device_name": "real-process-test",
        "client_credentials": {"access_token": "a", "refresh_token": "r", "expires_in": 600},
    }


async def test_pair_over_real_http_and_restart(processes, tmp_path, database_url):
    state = tmp_path / "state"
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = processes.rawp(*_master_args(state, database_url, port))
    wait_for_http(f"{base}/v1/auth/pair", proc=proc)

    url = _pairing_url(state, database_url, port, base)
    assert url.startswith(f"{base}/v1/auth/pair?token=")
    token = url.split("token=", 1)[1]
    async with aiohttp.ClientSession() as http:
        async with http.get(url) as note:
            assert note.status == 200
            assert "rawp client pair" in (await note.json())["message"]
        async with http.post(
            f"{base}/v1/auth/pair", json=_pair_body(token, "https://127.0.0.1:8701")
        ) as response:
            assert response.status == 400  # no --dev: loopback is forbidden (§3.2)
            assert (await response.json())["error_code"] == "INVALID_CLIENT_ADDRESS"
        async with http.post(
            f"{base}/v1/auth/pair", json=_pair_body(token, "https://10.0.0.9:8701")
        ) as response:
            assert response.status == 200
            paired = await response.json()
        async with http.put(
            f"{base}/v1/nodes/config/limits",
            json={"config_version": 1, "effective_at": "2020-01-01T00:00:00Z", "limits": {}},
            headers={"Authorization": f"Bearer {paired['access_token']}"},
        ) as response:
            assert response.status == 400
            assert (await response.json())["error_code"] == "CONFIG_FIELD_MISSING"

    key_file = state / KEY_FILE
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    proc.terminate()
    assert proc.wait(timeout=15) == 0
    output = proc.stdout.read().decode()
    assert token not in output  # the pairing token never reaches the log
    assert paired["access_token"] not in output

    # A restart keeps the key and the database: the old refresh token still works.
    again = processes.rawp(*_master_args(state, database_url, port))
    wait_for_http(f"{base}/v1/auth/pair", proc=again)
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            f"{base}/v1/auth/refresh", json={"refresh_token": paired["refresh_token"]}
        ) as response,
    ):
        assert response.status == 200
        refreshed = await response.json()
    assert refreshed["server_credentials"] == paired["server_credentials"]


async def test_tls(processes, tmp_path):
    cert, key = self_signed_certificate(tmp_path)
    port = free_port()
    db = f"sqlite+aiosqlite:///{tmp_path / 'm.db'}"
    proc = processes.rawp(
        *_master_args(tmp_path / "state", db, port), "--tls-cert", str(cert), "--tls-key", str(key)
    )
    context = ssl.create_default_context(cafile=str(cert))
    for _ in range(300):
        try:
            async with (
                aiohttp.ClientSession() as http,
                http.get(f"https://127.0.0.1:{port}/v1/nothing", ssl=context) as response,
            ):
                assert response.status == 404
                assert (await response.json())["error_code"] == "NOT_FOUND"
                break
        except aiohttp.ClientConnectorError:
            assert proc.poll() is None, proc.stdout.read().decode()
            await asyncio.sleep(0.05)
    else:
        pytest.fail("the TLS master never answered")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tls-cert", "cert.pem"], "--tls-cert and --tls-key go together"),
        (["--tls-cert", "nope.pem", "--tls-key", "nope.key"], "no such file"),
        (["--node-rate-limit", "lots"], "a rate looks like"),
    ],
)
def test_bad_options_are_clear_errors(tmp_path, args, message):
    result = subprocess.run(
        [sys.executable, "-m", "rawp_app.cli", "master", "--state-dir", str(tmp_path), *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr
