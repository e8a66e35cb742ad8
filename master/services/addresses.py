"""Validating a client's `client_address` (§3.2, K-01, A-01, A-02) as the OS will use it.

A `client_address` is a base URL with a scheme: `https://host[:port]` (docs/protocol.md). By
default only `https://` is accepted, and loopback, link-local and unspecified hosts are refused
("Loopback Forbidden", M-PAIR-04); private ranges are allowed (M-PAIR-05). The development switch
(`--dev`, K-01) also allows `http://` and loopback so everything can run on one machine.
Link-local and unspecified addresses stay refused even then: nothing can call them back, and
169.254.169.254 is the cloud metadata service of the master's own host.

Rules (issue 15 §1; the decision for every range is the table in docs/protocol.md):

1. A host is read the way the resolver will read it, not the way `ipaddress` does: every IPv4
   spelling glibc's `inet_aton` accepts (`127.1`, `2130706433`, `0x7f000001`, `0177.0.0.1`, mixed
   forms) is that address, and is checked and stored in dotted-quad form. One trailing dot is
   dropped (`127.0.0.1.`, `localhost.`). An IPv6 literal with a zone (`fe80::1%eth0`) is refused:
   a zone names an interface of the master's host.
2. IPv4 carried inside IPv6 (mapped `::ffff:a.b.c.d`, compatible `::a.b.c.d`, NAT64
   `64:ff9b::/96` and `64:ff9b:1::/48`, 6to4, Teredo) is checked as that IPv4 address too.
3. A name is resolved and EVERY answer (A and AAAA) must pass; one loopback, link-local or
   unspecified answer refuses the name (DNS names that resolve to loopback, A-01). A name that
   does not resolve is refused at pairing: the client is online when it pairs.
4. The check is made at pairing and again on every call, and the call connects to the addresses
   that were checked (`master.services.pinning`): no second lookup that DNS rebinding can change.
5. The resolver is a parameter (`AddressPolicy(resolve=...)`), so tests answer names without
   /etc/hosts or the network.
"""

from __future__ import annotations

import asyncio
import errno
import ipaddress
import re
import socket
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from rawp.errors import BadRequest

# RFC 6761: these names are loopback whatever a resolver says; refused without asking one.
LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"}
IP = ipaddress.IPv4Address | ipaddress.IPv6Address
# (host, port) -> every address the name resolves to, as IP strings.
Resolver = Callable[[str, int], Awaitable[list[str]]]

_NAME = re.compile(r"[a-z0-9_-]+(\.[a-z0-9_-]+)*")
_NUMERIC_LABEL = re.compile(r"[0-9]+|0x[0-9a-f]*")
_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))
_THIS_NETWORK = ipaddress.ip_network("0.0.0.0/8")
_BROADCAST = ipaddress.IPv4Address("255.255.255.255")


class AddressRefused(OSError):
    """A host the master must not call. An OSError, so a refusal inside aiohttp's or asyncio's
    connect path surfaces as a failed connection (502 to our caller), never as a call made.
    The reason is its `strerror`, which is what aiohttp shows of a failed connect."""

    def __init__(self, reason: str) -> None:
        super().__init__(errno.EACCES, reason)

    def __str__(self) -> str:
        return self.strerror


async def system_resolve(host: str, port: int) -> list[str]:
    """All A/AAAA answers of the OS resolver (getaddrinfo), as the OS would use them."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def _refuse(message: str) -> BadRequest:
    return BadRequest(message, "INVALID_CLIENT_ADDRESS")


def parse_host(host: str) -> IP | None:
    """The IP address `host` denotes to the resolver (rule 1), or None for a name.

    Raises AddressRefused for a host that is neither (a zone, an impossible spelling)."""
    if ":" in host:
        if "%" in host:
            raise AddressRefused(f"{host!r}: an IPv6 zone names an interface of this host")
        try:
            return ipaddress.IPv6Address(host)
        except ValueError:
            raise AddressRefused(f"{host!r} is not a valid IPv6 address") from None
    if not _NAME.fullmatch(host):
        raise AddressRefused(f"{host!r} is neither an IP address nor a host name")
    try:
        # glibc's parser, the one getaddrinfo uses for numeric hosts: short, decimal, hex, octal.
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except OSError:
        pass
    if _NUMERIC_LABEL.fullmatch(host.rsplit(".", 1)[-1]):
        # A numeric last label is never a host name (RFC 3696 §2); resolvers differ on it.
        raise AddressRefused(f"{host!r} is neither an IP address nor a host name")
    return None


def _embedded_v4(ip: IP) -> list[ipaddress.IPv4Address]:
    """IPv4 addresses an IPv6 address carries (rule 2)."""
    if isinstance(ip, ipaddress.IPv4Address):
        return []
    found = [ip.ipv4_mapped, ip.sixtofour]
    if ip.teredo:
        found.extend(ip.teredo)
    value = int(ip)
    if value >> 32 == 0 and value > 1:  # IPv4-compatible ::a.b.c.d (not :: or ::1)
        found.append(ipaddress.IPv4Address(value))
    if any(ip in net for net in _NAT64):
        found.append(ipaddress.IPv4Address(value & 0xFFFFFFFF))
    return [v4 for v4 in found if v4 is not None]


def refusal(ip: IP, *, dev: bool) -> str | None:
    """Why the master must not call `ip` (docs/protocol.md, address table), or None."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.scope_id:
        return "an IPv6 zone names an interface of this host"
    for inner in _embedded_v4(ip):
        reason = refusal(inner, dev=dev)
        if reason is not None:
            return f"{reason} (carried in {ip})"
    if ip.is_unspecified or (isinstance(ip, ipaddress.IPv4Address) and ip in _THIS_NETWORK):
        return "an unspecified address cannot be called back"
    if ip.is_link_local:
        return "a link-local address is forbidden (§3.2)"
    if ip.is_multicast or ip == _BROADCAST:
        return "a multicast or broadcast address cannot be called back"
    if isinstance(ip, ipaddress.IPv4Address) and ip.is_reserved:
        return "a reserved address (240.0.0.0/4) cannot be called back"
    if ip.is_loopback and not dev:
        return "a loopback address is forbidden (§3.2)"
    return None


class AddressPolicy:
    """The §3.2 rules of one master: `dev` (K-01) and the resolver names go through."""

    def __init__(self, *, dev: bool, resolve: Resolver = system_resolve) -> None:
        self.dev = dev
        self.resolve = resolve

    def normalize(self, address: str) -> str:
        """The address as the master will call it (`scheme://host[:port]`), or a 400.

        Syntax and literal addresses only; `check` also resolves a name."""
        try:
            parts = urlsplit(address.strip())
            port = parts.port
        except ValueError as exc:
            raise _refuse(f"client_address is not a valid URL: {exc}") from None
        scheme = parts.scheme.lower()
        allowed = ("https", "http") if self.dev else ("https",)
        if scheme not in allowed:
            hint = "" if self.dev else " (http:// only in development mode, --dev)"
            raise _refuse(f"client_address must use https://{hint}; got {address!r}")
        host = _strip_dot((parts.hostname or "").lower())
        if not host:
            raise _refuse("client_address has no host")
        if parts.username or parts.password or parts.query or parts.fragment:
            raise _refuse("client_address must not carry credentials, a query or a fragment")
        if parts.path not in ("", "/"):
            raise _refuse("client_address must be a base URL without a path")
        try:
            ip = self.precheck(host)
        except AddressRefused as exc:
            raise _refuse(f"client_address {address!r}: {exc}") from None
        shown = host if ip is None else str(ip)
        shown = f"[{shown}]" if ":" in shown else shown
        return f"{scheme}://{shown}" + (f":{port}" if port is not None else "")

    async def check(self, address: str) -> str:
        """Pairing (rule 3): `normalize`, then every answer of a name must pass too."""
        normalized = self.normalize(address)
        parts = urlsplit(normalized)
        try:
            await self.vet(parts.hostname or "", parts.port or _default_port(parts.scheme))
        except AddressRefused as exc:
            raise _refuse(f"client_address {address!r}: {exc}") from None
        except OSError as exc:  # socket.gaierror and friends: the name does not resolve
            raise _refuse(f"client_address {address!r} does not resolve: {exc}") from None
        return normalized

    def precheck(self, host: str) -> IP | None:
        """The literal address of `host` if it passes, None for a name that may; or refuse."""
        host = _strip_dot(host.lower())
        ip = parse_host(host)
        if ip is None:
            if not self.dev and (host in LOOPBACK_NAMES or host.endswith(".localhost")):
                raise AddressRefused(f"{host!r} is a loopback name, forbidden (§3.2)")
            return None
        reason = refusal(ip, dev=self.dev)
        if reason is not None:
            raise AddressRefused(f"{host}: {reason}")
        return ip

    async def vet(self, host: str, port: int) -> list[str]:
        """The addresses to connect to for `host`, every one checked (rules 3, 4)."""
        ip = self.precheck(host)
        if ip is not None:
            return [str(ip)]
        answers = await self.resolve(_strip_dot(host.lower()), port)
        if not answers:
            raise AddressRefused(f"{host!r} has no address")
        checked = []
        for answer in answers:
            try:
                resolved = ipaddress.ip_address(answer)
            except ValueError:
                raise AddressRefused(f"{host!r} resolved to {answer!r}, not an address") from None
            reason = refusal(resolved, dev=self.dev)
            if reason is not None:
                raise AddressRefused(f"{host!r} resolves to {answer}: {reason}")
            checked.append(str(resolved))
        return checked


def _strip_dot(host: str) -> str:
    return host[:-1] if host.endswith(".") and not host.endswith("..") else host


def _default_port(scheme: str) -> int:
    return 443 if scheme in ("https", "wss") else 80
