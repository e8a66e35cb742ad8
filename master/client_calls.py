"""The master calling a local client's HTTP API (§3.4, §4, §4.1, §5).

- Every call carries `Authorization: Bearer <client access token>`, the token the client issued
  at pairing (M-AUTH-03).
- On `401` the caller refreshes once through the client's `POST /v1/auth/refresh` and retries
  the original request once (M-AUTH-01, docs/protocol.md "401"). A token past its `expires_in`
  is refreshed before the call. Concurrent calls share one refresh, because the client rotates
  its refresh token and a second refresh with the old one would fail.
- Calls to a node are spaced by the client's synced `rate_limit` (M-CFG-01); traffic of a
  session uses the `rate_limit` pinned to that session instead (M-PIN-05).
- A deprecation `Warning` header in a client's answer is logged (X-COMP-03).
- Every call goes to a checked address of the client (§3.2, M-PAIR-04): the client's host is
  checked again by the `AddressPolicy` and the connection made to the addresses that check
  returned (`master.services.pinning`), so a name rebound to loopback after pairing is refused
  (`NODE_UNREACHABLE`) before anything is sent. Redirects are not followed: a `Location`
  with a literal IP would skip the pinned resolver, and the RAWP API has none (the 3xx is
  returned to the caller as it is).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import orjson

from master.services.addresses import AddressPolicy, AddressRefused
from master.services.config_scopes import ConfigScopes
from master.storage import nodes as store
from master.storage.db import Database
from rawp.clock import Clock
from rawp.errors import NotFound, RawpError

if TYPE_CHECKING:
    import aiohttp

log = logging.getLogger("rawp.master.client_calls")


class NodeCallError(RawpError):
    """A node could not be reached or would not take our credentials (502 to our own callers)."""

    status = 502
    default_code = "NODE_UNREACHABLE"


@dataclass(frozen=True)
class ClientReply:
    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


class Throttle:
    """Spaces calls `1/rate` seconds apart, per node, on the injected clock and sleep."""

    def __init__(self, clock: Clock, sleep: Callable[[float], Awaitable[None]]) -> None:
        self._clock = clock
        self._sleep = sleep
        self._next_at: dict[str, float] = {}

    async def wait(self, key: str, rate: float) -> None:
        now = self._clock.monotonic()
        start = max(now, self._next_at.get(key, now))
        self._next_at[key] = start + 1.0 / rate
        if start > now:
            await self._sleep(start - now)


class ClientCaller:
    def __init__(
        self,
        db: Database,
        config: ConfigScopes,
        clock: Clock,
        *,
        addresses: AddressPolicy,
        unsynced_rate: float = 1.0,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        timeout_seconds: float = 30.0,
    ) -> None:
        self._db = db
        self._config = config
        self._clock = clock
        self.addresses = addresses
        self._unsynced_rate = unsynced_rate
        self._throttle = Throttle(clock, sleep)
        self._timeout_seconds = timeout_seconds
        self._http: aiohttp.ClientSession | None = None
        self._refresh_locks: dict[str, asyncio.Lock] = {}

    async def close(self) -> None:
        if self._http is not None:
            await self._http.close()
            self._http = None

    def _session(self) -> aiohttp.ClientSession:
        # aiohttp is imported on first use: it is the slowest import of the master's start.
        import aiohttp

        from master.services.pinned_http import pinned_session

        if self._http is None or self._http.closed:
            timeout = aiohttp.ClientTimeout(total=self._timeout_seconds)
            self._http = pinned_session(self.addresses, timeout)
        return self._http

    def _url(self, node: store.Node, path: str) -> str:
        """`{client_address}{path}`, once its host passes the §3.2 check again.

        aiohttp does not ask its resolver about a literal IP, so a literal host is checked
        here; a name is checked by the pinned resolver on every new connection."""
        try:
            self.addresses.precheck(urlsplit(node.client_address).hostname or "")
        except AddressRefused as exc:
            raise NodeCallError(f"node {node.id} has a refused address: {exc}") from None
        return f"{node.client_address}{path}"

    async def call(
        self,
        node_id: str,
        method: str,
        path: str,
        *,
        json: Any = None,
        session_id: str | None = None,
    ) -> ClientReply:
        """`method {client_address}{path}` as the node's client expects it; any status returns."""
        node = await self.node(node_id)
        rate = await self._rate(node_id, session_id)
        # Every request to the client counts against its rate_limit, refreshes included.
        await self._throttle.wait(node_id, rate)
        credentials = node.credentials
        if credentials.expires_at is not None and credentials.expires_at <= self._clock.now():
            credentials = await self._refresh(node, credentials.access_token)
            await self._throttle.wait(node_id, rate)
        reply = await self._send(node, method, path, json, credentials.access_token)
        if reply.status == 401:
            await self._throttle.wait(node_id, rate)
            credentials = await self._refresh(node, credentials.access_token)
            await self._throttle.wait(node_id, rate)
            reply = await self._send(node, method, path, json, credentials.access_token)
        return reply

    async def node(self, node_id: str) -> store.Node:
        """The active node with its credentials, or 404 NODE_NOT_FOUND."""
        async with self._db.connect() as conn:
            node = await store.get_node(conn, node_id)
        if node is None or not node.active or node.credentials is None:
            raise NotFound(f"no paired node {node_id}", "NODE_NOT_FOUND")
        return node

    async def _rate(self, node_id: str, session_id: str | None) -> float:
        if session_id is not None:
            pinned = await self._config.pinned_config(session_id)
            return float(pinned.limits.rate_limit)
        rate = await self._config.current_rate_limit(node_id)
        return float(rate) if rate is not None else self._unsynced_rate

    async def _send(
        self, node: store.Node, method: str, path: str, json: Any, access_token: str
    ) -> ClientReply:
        import aiohttp

        url = self._url(node, path)
        headers = {"Authorization": f"Bearer {access_token}"}
        try:
            async with self._session().request(
                method, url, json=json, headers=headers, allow_redirects=False
            ) as resp:
                raw = await resp.read()
                body = _decode(raw, resp.content_type)
                reply_headers = dict(resp.headers)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise NodeCallError(f"node {node.id} did not answer {method} {path}: {exc}") from None
        if "Warning" in reply_headers:
            log.warning(
                "node %s answered %s %s with Warning: %s",
                node.id,
                method,
                path,
                reply_headers["Warning"],
            )
        return ClientReply(resp.status, body, reply_headers)

    async def _refresh(self, node: store.Node, failed_token: str) -> store.ClientCredentials:
        """Renew the client credentials once, however many calls hit the 401 together."""
        import aiohttp

        lock = self._refresh_locks.setdefault(node.id, asyncio.Lock())
        async with lock:
            current = (await self.node(node.id)).credentials
            if current.access_token != failed_token:
                return current  # another call refreshed while we waited
            url = self._url(node, "/v1/auth/refresh")
            try:
                async with self._session().post(
                    url, json={"refresh_token": current.refresh_token}, allow_redirects=False
                ) as resp:
                    raw = await resp.read()
                    status, body = resp.status, _decode(raw, resp.content_type)
            except (aiohttp.ClientError, TimeoutError) as exc:
                raise NodeCallError(f"node {node.id} did not answer the refresh: {exc}") from None
            if status != 200 or not _is_credentials(body):
                raise NodeCallError(
                    f"node {node.id} refused to refresh our credentials (HTTP {status})",
                    "NODE_AUTH_FAILED",
                )
            fresh = store.ClientCredentials(
                access_token=body["access_token"],
                refresh_token=body["refresh_token"],
                expires_at=self._clock.now() + timedelta(seconds=body["expires_in"]),
            )
            async with self._db.begin() as conn:
                await store.store_client_credentials(conn, node.id, fresh)
            log.info("refreshed the client credentials of node %s", node.id)
            return fresh


def _decode(raw: bytes, content_type: str) -> Any:
    if not raw:
        return None
    if "json" in content_type:
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            return raw.decode(errors="replace")
    return raw.decode(errors="replace")


def _is_credentials(body: Any) -> bool:
    return (
        isinstance(body, dict)
        and isinstance(body.get("access_token"), str)
        and isinstance(body.get("refresh_token"), str)
        and isinstance(body.get("expires_in"), int)
        and not isinstance(body.get("expires_in"), bool)
        and body["expires_in"] > 0
    )
