"""`rawp client` with TLS (K-01): https and wss with a certificate, and no plain http
without `--dev`."""

from __future__ import annotations

import asyncio
import ssl
import time

import aiohttp
import orjson
from websockets.asyncio.client import connect

from client.link.auth import ClientAuth
from client.state import StateDir
from rawp.clock import new_id, new_secret
from tests.support import free_port, self_signed_certificate


async def test_https_and_wss_with_a_certificate(tmp_path, processes):
    cert, key = self_signed_certificate(tmp_path)
    port, state = free_port(), tmp_path / "state"
    # The master's token is signed with the client's key: create the state before the client.
    token = ClientAuth(StateDir.open(state), 60).issue().access_token
    proc = processes.rawp(
        "client",
        "--port",
        str(port),
        "--tls-cert",
        str(cert),
        "--tls-key",
        str(key),
        "--state-dir",
        str(state),
        "--allow-root",
        str(tmp_path),
    )
    context = ssl.create_default_context(cafile=str(cert))
    base = f"https://127.0.0.1:{port}"
    headers = {"Authorization": f"Bearer {token}"}
    async with aiohttp.ClientSession() as http:
        deadline = time.monotonic() + 30
        while True:
            try:
                async with http.get(f"{base}/v1/health", headers=headers, ssl=context) as resp:
                    break
            except aiohttp.ClientConnectorError:
                assert time.monotonic() < deadline and proc.poll() is None, "client never came up"
                await asyncio.sleep(0.1)
        assert resp.status == 200
        async with http.get(f"{base}/v1/health", headers=headers, ssl=context) as resp:
            assert (await resp.json())["status"] == "online"
        sid, ticket = new_id(), new_secret()
        body = {
            "session_id": sid,
            "ticket": ticket,
            "agent_name": "demo",
            "workspace_path": str(tmp_path),
        }
        async with http.post(
            f"{base}/v1/session/init", json=body, headers=headers, ssl=context
        ) as resp:
            assert resp.status == 201
    url = f"wss://127.0.0.1:{port}/v1/ws/stream?ticket={ticket}&session_id={sid}"
    async with connect(url, subprotocols=["rawp-dps-1.0"], ssl=context) as ws:
        assert orjson.loads(await ws.recv())["type"] == "session.capabilities"


def test_plain_http_needs_dev(tmp_path, processes):
    proc = processes.rawp("client", "--port", str(free_port()), "--state-dir", str(tmp_path))
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 2 and b"needs --dev" in out
