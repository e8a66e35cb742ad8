"""No agent outlives its client (issue 14 §3): a real `rawp client`, SIGKILLed, takes its
agents' whole process groups with it; a client restarted on the same state directory ends
the groups a previous run left, and never a process that merely reuses a recorded pid."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import aiohttp
import psutil
from websockets.asyncio.client import connect

from client.link.auth import ClientAuth
from client.processes.groups import RECORD_FILE, start_time
from client.state import StateDir
from rawp.clock import new_id, new_secret
from tests.client.harness import frame, recv, recv_until
from tests.support import free_port

# Ignores SIGTERM and starts a grandchild that ignores it too: only SIGKILL ends them.
STUBBORN = """
import json, os, signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen([sys.executable, "-c",
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"])
open(os.environ["MARKER"], "w").write(f"{os.getpid()} {child.pid}")
print(json.dumps({"type": "agent.text.delta", "payload": {"content_index": 0, "text": "up"}}),
      flush=True)
while True:
    time.sleep(0.05)
"""


def running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


async def all_gone(pids: list[int], within: float) -> float:
    """Wait (polling /proc) until none of `pids` runs; return how long it took."""
    started = time.monotonic()
    while any(running(pid) for pid in pids):
        assert time.monotonic() - started < within, [p for p in pids if running(p)]
        await asyncio.sleep(0.02)
    return time.monotonic() - started


async def start_client(processes, tmp_path: Path, state: Path) -> tuple[subprocess.Popen, str]:
    agents = tmp_path / "agents.toml"
    script = tmp_path / "stubborn.py"
    script.write_text(STUBBORN)
    agents.write_text(
        f'[agents.stubborn]\nkind = "script"\nmode = "jsonl"\n'
        f'command = ["{sys.executable}", "{script}"]\n'
        f'env = {{ MARKER = "{tmp_path}/marker" }}\n'
    )
    port = free_port()
    proc = processes.rawp(
        "client",
        "--dev",
        "--port",
        str(port),
        "--state-dir",
        str(state),
        "--allow-root",
        str(tmp_path),
        "--agents-file",
        str(agents),
        stdout=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    async with aiohttp.ClientSession() as http:
        for _ in range(600):
            try:
                async with http.get(f"{base}/v1/health"):
                    return proc, base
            except aiohttp.ClientConnectorError:
                assert proc.poll() is None, "rawp client exited"
                await asyncio.sleep(0.05)
    raise AssertionError("rawp client did not answer")


async def test_sigkill_of_the_client_ends_the_agent_and_its_grandchildren(tmp_path, processes):
    state = tmp_path / "state"
    token = ClientAuth(StateDir.open(state), 60).issue().access_token
    proc, base = await start_client(processes, tmp_path, state)
    sid, ticket = new_id(), new_secret()
    body = {"session_id": sid, "ticket": ticket, "agent_name": "stubborn"}
    body["workspace_path"] = str(tmp_path)
    async with aiohttp.ClientSession() as http:
        headers = {"Authorization": f"Bearer {token}"}
        async with http.post(f"{base}/v1/session/init", json=body, headers=headers) as resp:
            assert resp.status == 201
    url = base.replace("http", "ws") + f"/v1/ws/stream?ticket={ticket}&session_id={sid}"
    async with connect(url, subprotocols=["rawp-dps-1.0"]) as ws:
        await recv(ws), await recv(ws)
        await ws.send(frame("control.prompt.request", {"prompt_text": "go"}, sid))
        await recv_until(ws, "agent.text.delta")
        agent, grandchild = map(int, (tmp_path / "marker").read_text().split())
        supervisor = os.getpgid(agent)
        assert os.getpgid(grandchild) == supervisor
        assert psutil.Process(supervisor).ppid() == proc.pid
        # The running group is on record, in a file only the client's user can read.
        record = state / RECORD_FILE
        assert stat.S_IMODE(record.stat().st_mode) == 0o600
        groups = json.loads(record.read_text())["groups"]
        assert groups == [{"pid": supervisor, "start": start_time(supervisor)}]
        group = [supervisor, agent, grandchild]
        assert all(running(pid) for pid in group)
        os.kill(proc.pid, signal.SIGKILL)
        try:
            took = await all_gone(group, within=5.0)
        finally:  # a failing run must not leave them behind either
            with contextlib.suppress(ProcessLookupError):
                os.killpg(supervisor, signal.SIGKILL)
    await asyncio.to_thread(proc.wait, 10)
    assert proc.returncode == -signal.SIGKILL
    assert took < 5.0


async def test_a_restarted_client_ends_the_groups_its_last_run_left(tmp_path, processes):
    state = tmp_path / "state"
    state.mkdir()
    # A group a crashed run left: its leader (its own session) and a child of the leader.
    # (processes.start: each in its own session, its group killed after the test whatever
    # happens.)
    leftover = processes.start(["sh", "-c", "sleep 600 & echo $!; wait"])
    assert leftover.stdout is not None
    grandchild = int(leftover.stdout.readline())
    # A process whose pid is on record but which started at another time: a reused pid.
    stranger = processes.start(["sleep", "600"])
    (state / RECORD_FILE).write_text(
        json.dumps(
            {
                "groups": [
                    {"pid": leftover.pid, "start": start_time(leftover.pid)},
                    {"pid": stranger.pid, "start": start_time(stranger.pid) - 1},
                ]
            }
        )
    )
    assert running(leftover.pid) and running(grandchild)
    await start_client(processes, tmp_path, state)
    # The sweep runs before the client serves: once it answers, the group is gone.
    await all_gone([leftover.pid, grandchild], within=1.0)
    assert running(stranger.pid)
    assert json.loads((state / RECORD_FILE).read_text())["groups"] == []


async def test_the_groups_of_a_client_still_running_are_left_alone(tmp_path, processes):
    """Two clients started on one state directory by mistake: the second ends nothing."""
    state = tmp_path / "state"
    state.mkdir()
    group = processes.start(["sleep", "600"])
    me = os.getpid()  # the record's writer: alive, so not a previous run
    (state / RECORD_FILE).write_text(
        json.dumps(
            {
                "client": {"pid": me, "start": start_time(me)},
                "groups": [{"pid": group.pid, "start": start_time(group.pid)}],
            }
        )
    )
    await start_client(processes, tmp_path, state)
    assert running(group.pid)
