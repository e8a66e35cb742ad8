"""Validating a client's `client_address` at pairing (§3.2, K-01, A-01, A-02).

A `client_address` is a base URL with a scheme: `https://host[:port]` (docs/protocol.md). By
default only `https://` is accepted, and loopback, link-local and unspecified hosts are refused
("Loopback Forbidden", M-PAIR-04); private ranges are allowed (M-PAIR-05). The development switch
(`--dev`, K-01) also allows `http://` and loopback so everything can run on one machine.
Link-local and unspecified addresses stay refused even then: nothing can call them back.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from rawp.errors import BadRequest

LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"}


def _refuse(message: str) -> BadRequest:
    return BadRequest(message, "INVALID_CLIENT_ADDRESS")


def normalize_client_address(address: str, *, dev: bool) -> str:
    """The address as the master will call it (`scheme://host[:port]`), or a 400."""
    try:
        parts = urlsplit(address.strip())
        port = parts.port
    except ValueError as exc:
        raise _refuse(f"client_address is not a valid URL: {exc}") from None
    scheme = parts.scheme.lower()
    allowed = ("https", "http") if dev else ("https",)
    if scheme not in allowed:
        hint = "" if dev else " (http:// only in development mode, --dev)"
        raise _refuse(f"client_address must use https://{hint}; got {address!r}")
    host = (parts.hostname or "").rstrip(".").lower()
    if not host:
        raise _refuse("client_address has no host")
    if parts.username or parts.password or parts.query or parts.fragment:
        raise _refuse("client_address must not carry credentials, a query or a fragment")
    if parts.path not in ("", "/"):
        raise _refuse("client_address must be a base URL without a path")
    _check_host(host, dev=dev)
    shown = f"[{host}]" if ":" in host else host
    return f"{scheme}://{shown}" + (f":{port}" if port is not None else "")


def _check_host(host: str, *, dev: bool) -> None:
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        ip = None
    if ip is None:
        if (host in LOOPBACK_NAMES or host.endswith(".localhost")) and not dev:
            raise _refuse(f"loopback address {host!r} is forbidden (§3.2)")
        return
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    if ip.is_unspecified:
        raise _refuse(f"unspecified address {host!r} cannot be called back")
    if ip.is_link_local:
        raise _refuse(f"link-local address {host!r} is forbidden (§3.2)")
    if ip.is_multicast:
        raise _refuse(f"multicast address {host!r} cannot be called back")
    if ip.is_loopback and not dev:
        raise _refuse(f"loopback address {host!r} is forbidden (§3.2)")
