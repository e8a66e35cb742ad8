"""A gateway started together with its master (Docker, compose) waits for it to listen
(gateway/edge_client.py rule 5) instead of exiting at the first refused connection."""

from __future__ import annotations

import asyncio

import pytest
from aiohttp import web

from gateway.edge_client import EdgeApiError, EdgeClient
from tests.support import free_port

SECRET = "s" * 40


async def test_a_master_that_starts_listening_late_is_waited_for():
    port = free_port()
    client = EdgeClient(f"http://127.0.0.1:{port}", SECRET)
    waiting = asyncio.create_task(client.wait_until_reachable(10, interval_s=0.05))
    await asyncio.sleep(0.3)  # refused meanwhile: nothing listens yet
    assert not waiting.done()

    async def health(request: web.Request) -> web.Response:
        return web.json_response({"status": "online"})

    app = web.Application()
    app.router.add_get("/v1/health", health)
    runner = web.AppRunner(app)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", port).start()
        await asyncio.wait_for(waiting, 5)
    finally:
        await client.close()
        await runner.cleanup()


async def test_a_master_that_never_answers_is_a_clear_error_in_time():
    client = EdgeClient(f"http://127.0.0.1:{free_port()}", SECRET)
    loop = asyncio.get_running_loop()
    started = loop.time()
    try:
        with pytest.raises(EdgeApiError) as caught:
            await client.wait_until_reachable(0.4, interval_s=0.05)
    finally:
        await client.close()
    assert loop.time() - started < 3
    assert caught.value.error_code == "MASTER_UNREACHABLE"
    assert "did not answer within 0.4 s" in caught.value.message
