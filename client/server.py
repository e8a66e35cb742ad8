"""Serving the local client's app: hypercorn, the same way under `rawp client` and `rawp up`.

One server for the client wherever it runs (issue 18 §3), so that the first-run path (`rawp up`)
behaves on WebSockets as the deployed one does. hypercorn suits the client: it holds a few
sockets (one per session), so permessage-deflate — the reason the master runs under uvicorn
(master/server.py, issue 7) — costs nothing that matters here.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable
from pathlib import Path


class CannotListen(OSError):
    """The client's address cannot be bound: in use, or not an address of this machine."""


async def serve_client(
    app,
    host: str,
    port: int,
    stop: asyncio.Event,
    *,
    certfile: Path | None = None,
    keyfile: Path | None = None,
    on_listening: Callable[[], None] | None = None,
) -> None:
    """Serve `app` until `stop` is set. No access log: session WebSocket URLs carry tickets
    (§4.2), and secrets are never logged. Raises CannotListen, one line naming the address, when
    it cannot be bound; `on_listening` runs once it can."""
    from hypercorn.asyncio import serve
    from hypercorn.config import Config

    # hypercorn binds inside `serve` and says nothing we could wait for, so the address is
    # tried first, as hypercorn binds it (SO_REUSEADDR): "listening" is then not a guess, and
    # a port in use is one line (as the master's, master.server) rather than a traceback.
    # The family and address exactly as hypercorn's Config.create_sockets takes them: "" is
    # every IPv4 address, a host with ":" is IPv6.
    bare = host.replace("[", "").replace("]", "")
    try:
        with socket.socket(socket.AF_INET6 if ":" in bare else socket.AF_INET) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((bare, port))
    except OSError:
        raise CannotListen(f"could not listen on {host}:{port} (in use, or not here)") from None
    if on_listening is not None:
        on_listening()

    config = Config()
    config.bind = [f"{host}:{port}"]
    config.accesslog = None
    config.errorlog = logging.getLogger("hypercorn.error")  # through our handler (runtime.logs)
    if certfile:
        config.certfile, config.keyfile = str(certfile), str(keyfile)
    loop = asyncio.get_running_loop()
    before = loop.get_exception_handler()
    loop.set_exception_handler(_cancelled_is_not_an_error)
    try:
        await serve(app, config, shutdown_trigger=stop.wait)
    except OSError:  # taken between the try above and hypercorn's own bind
        raise CannotListen(f"could not listen on {host}:{port} (in use, or not here)") from None
    finally:
        loop.set_exception_handler(before)


def _cancelled_is_not_an_error(loop: asyncio.AbstractEventLoop, context: dict) -> None:
    """hypercorn cancels each connection's task when it shuts down, and Python 3.11's
    `StreamReaderProtocol` callback then asks the cancelled task for its exception, which
    raises CancelledError into the loop's handler: an ERROR with a traceback per open
    connection on every SIGTERM (issue 34 §4; Python 3.12 checks `cancelled()` first).
    A cancelled task is how a stop looks, so it is dropped here; anything else is logged."""
    if isinstance(context.get("exception"), asyncio.CancelledError):
        return
    loop.default_exception_handler(context)
