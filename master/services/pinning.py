"""Connecting to a client at the addresses that were checked (§3.2, issue 15 §1 rule 4).

The check of `master.services.addresses` is only worth something if the connection goes where
the check looked. A name checked once and resolved again by the HTTP library can answer
differently the second time (DNS rebinding: a public address for the check, 127.0.0.1 for the
call). So both ways the master reaches a client resolve through `AddressPolicy.vet` and connect
to exactly what it returned:

- HTTP (aiohttp; `master.services.pinned_http`, imported on the first call): `PinnedResolver`
  is the connector's resolver, with aiohttp's DNS cache off, so every new connection is
  resolved and checked once, and connects to the checked answers. A literal IP in the URL
  bypasses aiohttp's resolver, so `ClientCaller` prechecks the host too.
- The data-plane WebSocket (websockets): `connect_pinned` vets the host and passes the checked
  IP as `host`, with the URL's host name kept for TLS (`server_hostname`, certificate check)
  and the `Host` header; proxies from the environment are not used (a proxy would resolve the
  name itself). With `host` given, websockets refuses a cross-origin redirect (a same-origin
  one reconnects to the same checked address); that refusal is an `AddressRefused` here.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from websockets.asyncio.client import ClientConnection, connect

from master.services.addresses import AddressPolicy, AddressRefused


async def connect_pinned(url: str, policy: AddressPolicy, **options: Any) -> ClientConnection:
    """`websockets.asyncio.client.connect(url, **options)` to a checked address of its host.

    Tries the checked addresses in order; the last failure is raised (an OSError for a refused
    host, so callers treat it like any unreachable client)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "wss" else 80)
    last: OSError | None = None
    for ip in await policy.vet(host, port):
        try:
            return await connect(url, host=ip, port=port, proxy=None, **options)
        except ValueError as exc:  # websockets: "cannot follow cross-origin redirect …"
            raise AddressRefused(f"the client's socket sent us elsewhere: {exc}") from None
        except OSError as exc:
            last = exc
    assert last is not None  # vet returns at least one address or raises
    raise last
