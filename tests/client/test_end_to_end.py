"""The whole chain on loopback, every part real: an edge → `rawp master` → `rawp client` →
the demo agent, and the answer back (RAWP §3.3, §5, §9.3–§9.4)."""

from __future__ import annotations

import asyncio
import re

import aiohttp
import orjson
from websockets.asyncio.client import connect

from tests.client.harness import frame
from tests.client.test_real_master import read_until
from tests.support import free_port, wait_for_http

SECRET = "edge-secret-for-the-test-0123456789"


async def test_a_prompt_from_the_edge_reaches_the_demo_agent_and_back(tmp_path, processes):
    master_port, client_port = free_port(), free_port()
    master_url = f"http://127.0.0.1:{master_port}"
    master = processes.rawp(
        "master",
        "--dev",
        "--port",
        str(master_port),
        "--state-dir",
        str(tmp_path / "m"),
        env={"RAWP_EDGE_SECRET": SECRET},
    )
    await asyncio.to_thread(wait_for_http, f"{master_url}/v1/auth/pair", 30, master)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.md").write_text("# notes\n")
    async with aiohttp.ClientSession() as http:
        async with http.post(
            f"{master_url}/v1/edge/auth/token",
            json={"subject": "local:e2e"},
            headers={"Authorization": f"Bearer {SECRET}"},
        ) as resp:
            assert resp.status == 200, await resp.text()
            user = {"Authorization": f"Bearer {(await resp.json())['access_token']}"}
        async with http.post(f"{master_url}/v1/edge/pairing-urls", headers=user) as resp:
            assert resp.status == 201, await resp.text()
            pairing_url = (await resp.json())["pairing_url"]

        pair = processes.rawp(
            "client",
            "pair",
            pairing_url,
            "--name",
            "e2e",
            "--dev",
            "--state-dir",
            str(tmp_path / "c"),
            "--public-address",
            f"http://127.0.0.1:{client_port}",
        )
        out, _ = await asyncio.to_thread(pair.communicate, None, 60)
        assert pair.returncode == 0, out
        node_id = re.search(rb"node ([0-9a-f-]{36})", out).group(1).decode()
        client = processes.rawp(
            "client",
            "--dev",
            "--port",
            str(client_port),
            "--state-dir",
            str(tmp_path / "c"),
            "--allow-root",
            str(tmp_path),
            env={"RAWP_DEMO_PAUSE": "0"},
        )
        await asyncio.to_thread(read_until, client, "config synced with the master")

        body = {"agent_name": "demo", "workspace_path": str(workspace)}
        async with http.post(
            f"{master_url}/v1/edge/nodes/{node_id}/sessions", json=body, headers=user
        ) as resp:
            assert resp.status == 201, await resp.text()
            created = await resp.json()
        sid = created["session_id"]
        url = (
            f"ws://127.0.0.1:{master_port}/v1/edge/ws/stream"
            f"?ticket={created['edge_ws_ticket']}&session_id={sid}"
        )
        async with connect(url, subprotocols=["rawp-dps-1.0"]) as ws:
            refs = [{"ref_id": "ref_0", "path": "notes.md", "display_path": "notes.md"}]
            await ws.send(
                frame(
                    "control.prompt.request",
                    {
                        "prompt_text": "hello from the edge <@file:ref_0|notes.md>",
                        "file_references": refs,
                    },
                    sid,
                )
            )
            seen = []
            while not seen or seen[-1]["type"] != "session.turn.end":
                seen.append(orjson.loads(await asyncio.wait_for(ws.recv(), 30)))
        types = [f["type"] for f in seen]
        assert "session.turn.start" in types and "tool.invoke.result" in types
        done = next(f for f in seen if f["type"] == "agent.text.done")["payload"]["text"]
        assert 'You said: "hello from the edge notes.md"' in done and "- notes.md" in done
        assert seen[-1]["payload"]["stop_reason"] == "end_turn"

        async with http.delete(f"{master_url}/v1/edge/sessions/{sid}", headers=user) as resp:
            assert resp.status == 204
