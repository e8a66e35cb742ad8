"""The aiohttp half of `master.services.pinning`: a resolver that answers with checked addresses.

Imported on the first call to a client only (aiohttp is the slowest import of the master).
"""

from __future__ import annotations

import socket

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult

from master.services.addresses import AddressPolicy


def pinned_session(policy: AddressPolicy, timeout: aiohttp.ClientTimeout) -> aiohttp.ClientSession:
    """An aiohttp session whose every connection goes through `policy.vet` (module rule 1)."""
    connector = aiohttp.TCPConnector(resolver=PinnedResolver(policy), use_dns_cache=False)
    # trust_env stays False: an HTTP(S)_PROXY would resolve the client's name on its own.
    return aiohttp.ClientSession(timeout=timeout, connector=connector)


class PinnedResolver(AbstractResolver):
    """aiohttp resolver answering with the addresses `AddressPolicy.vet` checked."""

    def __init__(self, policy: AddressPolicy) -> None:
        self._policy = policy

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        answers = []
        for ip in await self._policy.vet(host, port):
            ip_family = socket.AF_INET6 if ":" in ip else socket.AF_INET
            if family not in (socket.AF_UNSPEC, ip_family):
                continue
            answers.append(
                {
                    "hostname": host,  # TLS verifies this name, not the IP
                    "host": ip,
                    "port": port,
                    "family": ip_family,
                    "proto": 0,
                    "flags": socket.AI_NUMERICHOST,
                }
            )
        if not answers:
            raise OSError(f"{host!r} has no checked address of family {family!r}")
        return answers

    async def close(self) -> None:
        return None
