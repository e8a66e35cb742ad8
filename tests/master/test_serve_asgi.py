"""`master.server.serve_asgi`: stops when told, and a port it cannot bind is an OSError (with
no task left behind either way). A real uvicorn on a loopback port, with a minimal ASGI app."""

from __future__ import annotations

import asyncio
import socket

import aiohttp
import pytest

from master.server import serve_asgi
from tests.support import free_port


async def app(scope, receive, send) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            kind = message["type"].rsplit(".", 1)[-1]  # startup / shutdown
            await send({"type": f"lifespan.{kind}.complete"})
            if kind == "shutdown":
                return
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"up"})


def _tasks_besides(current: asyncio.Task | None) -> set[asyncio.Task]:
    return {task for task in asyncio.all_tasks() if task is not current}


async def test_it_serves_until_stop_is_set_then_returns_leaving_no_task():
    port, stop = free_port(), asyncio.Event()
    before = _tasks_besides(asyncio.current_task())
    serving = asyncio.create_task(serve_asgi(app, "127.0.0.1", port, stop))
    async with aiohttp.ClientSession() as http:
        async with asyncio.timeout(15):
            while True:  # until uvicorn listens
                try:
                    async with http.get(f"http://127.0.0.1:{port}/") as response:
                        assert await response.text() == "up"
                        break
                except aiohttp.ClientConnectorError:
                    await asyncio.sleep(0.05)
    stop.set()
    await asyncio.wait_for(serving, 15)
    assert _tasks_besides(asyncio.current_task()) <= before


async def test_a_port_in_use_is_an_oserror_not_a_systemexit():
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        with pytest.raises(OSError, match="could not listen"):
            await asyncio.wait_for(serve_asgi(app, "127.0.0.1", port, asyncio.Event()), 15)
