"""Running the master: uvicorn on the configured address, stopped by SIGINT/SIGTERM.

Why uvicorn and not hypercorn (issue 7, docs/benchmarks.md): the master holds one WebSocket per
edge and per client, thousands of them. hypercorn always accepts permessage-deflate when a peer
offers it (browsers and `websockets` do), which keeps a zlib compressor and decompressor per
socket — 256 MiB more at 1,000 sessions, over the 300 MB target — and costs CPU on every frame
of a relay whose frames are small JSON. uvicorn lets the server decline the extension
(`ws_per_message_deflate=False`) and measured faster for Quart in the relay benchmark.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Callable
from pathlib import Path

from master import gc_pauses
from master.settings import MasterSettings
from master.storage.db import Database
from runtime.database_reach import wait_for_database
from runtime.tasks import TaskOwner

log = logging.getLogger("rawp.master")


class StartupFailed(Exception):
    """The app's own start failed (uvicorn logged why); not an address problem."""


async def serve_asgi(
    app,
    host: str,
    port: int,
    stop: asyncio.Event,
    *,
    certfile: Path | None = None,
    keyfile: Path | None = None,
    on_listening: Callable[[], None] | None = None,
) -> None:
    """Serve `app` until `stop` is set: WebSockets without permessage-deflate, no access log
    (pairing URLs carry their token in the query string: secrets are never logged).
    `on_listening` is called once the app has started and the socket is bound."""
    import uvicorn

    class Server(uvicorn.Server):
        # The caller owns the signals (it sets `stop`); uvicorn's own capture would re-raise
        # SIGTERM after a clean shutdown and turn exit status 0 into "killed by a signal".
        @contextlib.contextmanager
        def capture_signals(self):
            yield

        async def startup(self, sockets=None) -> None:
            # uvicorn exits both when the app's startup fails and when it cannot bind: only
            # the second is about the address (issue 34 §2).
            try:
                await super().startup(sockets)
            except SystemExit:
                if self.lifespan.should_exit:
                    raise StartupFailed("the master could not start (see above)") from None
                raise OSError(f"could not listen on {host}:{port} (in use, or not here)") from None
            if on_listening is not None:
                on_listening()

    # uvicorn logs each accepted WebSocket's path *with its query* at INFO on "uvicorn.error";
    # edge tickets travel in that query (§4.2), so only warnings and errors get through.
    logging.getLogger("uvicorn.error").setLevel(logging.WARNING)
    server = Server(_uvicorn_config(app, host, port, certfile, keyfile))

    async def exit_when_told() -> None:
        await stop.wait()
        server.should_exit = True  # uvicorn closes its connections, then `serve()` returns

    # The watcher is owned for the life of the server (issue 14 §6); uvicorn itself runs here,
    # not in a task, so that its SystemExit is caught in `startup` rather than thrown at the loop.
    async with TaskOwner("master server", log) as owner:
        owner.spawn(exit_when_told(), name="stop-signal")
        await server.serve()


def _uvicorn_config(app, host: str, port: int, certfile: Path | None, keyfile: Path | None):
    import uvicorn

    from master.edge.api.ws_protocol import EdgeWebSocketProtocol

    return uvicorn.Config(
        app,
        host=host,
        port=port,
        ws=EdgeWebSocketProtocol,  # uvicorn's websockets-sansio, fewer pauses (its module)
        ws_per_message_deflate=False,
        ws_ping_interval=None,  # as under hypercorn: no server pings; a dead peer is seen by TCP
        lifespan="on",
        access_log=False,
        log_config=None,
        timeout_graceful_shutdown=5,
        ssl_certfile=str(certfile) if certfile else None,
        ssl_keyfile=str(keyfile) if keyfile else None,
    )


async def run(settings: MasterSettings) -> None:
    from master.app import create_app

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    if settings.dev:
        log.warning("development mode: http:// and loopback client addresses are accepted")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    # Compose or systemd may start the master before its database (issue 34 §2): wait for it
    # here, bounded, so the app's own start finds it (DatabaseUnreachable: one line, exit 2).
    db = Database(settings.database_address)
    try:
        await wait_for_database(db, settings.database_wait)
    finally:
        await db.dispose()
    app = create_app(settings)
    gc_pauses.install()  # short collector pauses with thousands of sockets (master/gc_pauses.py)

    def listening() -> None:  # only once it is true: the app started and the socket is bound
        print(f"rawp master listening on {settings.base_url}", file=sys.stderr, flush=True)

    await serve_asgi(
        app,
        settings.host,
        settings.port,
        stop,
        certfile=settings.tls_cert,
        keyfile=settings.tls_key,
        on_listening=listening,
    )


async def issue_pairing_url(settings: MasterSettings, user_id: str) -> str:
    """`rawp master pairing-url`: a token in the same database the server uses (§3.1)."""
    from master.wiring import build_services
    from rawp.clock import SYSTEM_CLOCK

    services = await build_services(settings, SYSTEM_CLOCK)
    try:
        ticket = await services.pairing.issue(user_id)
    finally:
        await services.close()
    return ticket.url
