"""Serving the local client's app: hypercorn, the same way under `rawp client` and `rawp up`.

One server for the client wherever it runs (issue 18 §3), so that the first-run path (`rawp up`)
behaves on WebSockets as the deployed one does. hypercorn suits the client: it holds a few
sockets (one per session), so permessage-deflate — the reason the master runs under uvicorn
(master/server.py, issue 7) — costs nothing that matters here.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path


async def serve_client(
    app,
    host: str,
    port: int,
    stop: asyncio.Event,
    *,
    certfile: Path | None = None,
    keyfile: Path | None = None,
) -> None:
    """Serve `app` until `stop` is set. No access log: session WebSocket URLs carry tickets
    (§4.2), and secrets are never logged. Raises OSError when the address cannot be bound."""
    from hypercorn.asyncio import serve
    from hypercorn.config import Config

    config = Config()
    config.bind = [f"{host}:{port}"]
    config.accesslog = None
    config.errorlog = logging.getLogger("hypercorn.error")  # through our handler (rawp.logs)
    if certfile:
        config.certfile, config.keyfile = str(certfile), str(keyfile)
    await serve(app, config, shutdown_trigger=stop.wait)
