"""`python -m tests.fakes` serves a fake in its own process and prints what it receives."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import aiohttp


async def read_line(proc: subprocess.Popen) -> str:
    line = await asyncio.wait_for(asyncio.to_thread(proc.stdout.readline), 15)
    assert line, f"the runner exited with {proc.poll()}"
    return line.decode().strip()


async def test_runner_prints_settings_then_the_calls_it_receives(processes):
    proc = processes.start([sys.executable, "-m", "tests.fakes", "discord"])
    api_line, gateway_line, token_line = [await read_line(proc) for _ in range(3)]
    api_base = api_line.removeprefix("DISCORD_API_BASE_URL=")
    assert api_base.startswith("http://127.0.0.1:") and api_base.endswith("/api/v10")
    assert gateway_line.startswith("DISCORD_GATEWAY_URL=ws://127.0.0.1:")
    token = token_line.removeprefix("# bot token: ")
    headers = {"Authorization": f"Bot {token}"}
    async with (
        aiohttp.ClientSession() as session,
        session.get(api_base + "/users/@me", headers=headers) as me,
    ):
        assert me.status == 200 and (await me.json())["bot"] is True
    assert await read_line(proc) == "200 GET /users/@me null"
