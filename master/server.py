"""Running the master: hypercorn on the configured address, stopped by SIGINT/SIGTERM."""

from __future__ import annotations

import asyncio
import logging
import signal
import sys

from master.settings import Settings

log = logging.getLogger("rawp.master")


async def run(settings: Settings) -> None:
    from hypercorn.asyncio import serve
    from hypercorn.config import Config

    from master.app import create_app

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    config = Config()
    host = f"[{settings.host}]" if ":" in settings.host else settings.host
    config.bind = [f"{host}:{settings.port}"]
    # No access log: pairing URLs carry their token in the query string (secrets never logged).
    config.accesslog = None
    config.errorlog = logging.getLogger("hypercorn.error")
    if settings.tls_cert:
        config.certfile = str(settings.tls_cert)
        config.keyfile = str(settings.tls_key)
    if settings.dev:
        log.warning("development mode: http:// and loopback client addresses are accepted")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    app = create_app(settings)
    print(f"rawp master listening on {settings.base_url}", file=sys.stderr, flush=True)
    await serve(app, config, shutdown_trigger=stop.wait)


async def issue_pairing_url(settings: Settings, user_id: str) -> str:
    """`rawp master pairing-url`: a token in the same database the server uses (§3.1)."""
    from master.wiring import build_services
    from rawp.clock import SYSTEM_CLOCK

    services = await build_services(settings, SYSTEM_CLOCK)
    try:
        ticket = await services.pairing.issue(user_id)
    finally:
        await services.close()
    return ticket.url
