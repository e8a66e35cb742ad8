"""Everything the client asks of its master (RAWP §3.3–§3.4, §4.1): pairing and config sync.

Rules:

1. Pairing (§3.3): the pairing URL gives the master's base URL and the pairing token; the
   client sends its address, device name and a fresh `client_credentials` pair, and keeps the
   master's answer in the state directory (mode 0600). The master's access token is verified
   against `server_credentials` before anything is stored (§4) — tolerantly where the spec is
   open (`rawp.tokens.verify_peer`): any standard JWS signing key the JWK names (ES256/384,
   EdDSA, RS256, …) and only the standard `exp` claim; a token that does not verify is refused.
   A refresh answer without `server_credentials` keeps the key from pairing (§3.4 names none).
2. Config sync (§4.1): both scopes, version 1, right after pairing and on every start
   (C-CFG-01/02); a runtime change PUTs only the changed scope with its version + 1
   (C-CFG-03/06); every request is a full snapshot (C-CFG-04). A 409 makes the client adopt
   `current_config_version + 1` and resend (K-02).
3. A 401 on any call refreshes once through the master's `/v1/auth/refresh` and retries the
   call once (§3.4, C-AUTH-01). A `Warning` header (deprecation, X-COMP-03) is logged.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import parse_qs, urlsplit

import aiohttp
from pydantic import ValidationError

from client.agents import AgentsFileError, load_agents
from client.settings import ClientSettings
from client.state import StateDir
from rawp.clock import SYSTEM_CLOCK, Clock, iso
from rawp.config import Limits, PinnedConfig
from rawp.errors import Unauthorized
from rawp.rest import ConfigSnapshot, PairRequest, RefreshRequest, TokenGrant
from rawp.tokens import verify_peer

log = logging.getLogger(__name__)

MAX_CONFLICT_RETRIES = 3


class MasterLinkError(Exception):
    """The master could not be reached or refused us; the message says which."""


def parse_pairing_url(url: str, *, dev: bool) -> tuple[str, str]:
    """`{base}/v1/auth/pair?token={pairing_token}` → (base, token) (A-03)."""
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.netloc:
        raise MasterLinkError("the pairing URL must start with https://")
    if parts.scheme == "http" and not dev:
        raise MasterLinkError("an http:// pairing URL needs --dev (K-01)")
    token = (parse_qs(parts.query).get("token") or [""])[0]
    if len(token) < 32:
        raise MasterLinkError("the pairing URL carries no pairing token (?token=…)")
    return f"{parts.scheme}://{parts.netloc}", token


def agent_kinds(settings: ClientSettings) -> tuple[str, ...]:
    """`agent_kind.<kind>` for every active agent kind of the agents file (§4.1.6).

    An unreadable agents file adds nothing here: `rawp client` refuses it at start anyway, with
    a message naming the problem.
    """
    try:
        specs = load_agents(settings.agents_file).values()
    except AgentsFileError:
        return ()
    return tuple(f"agent_kind.{kind}" for kind in sorted({s.kind for s in specs if s.is_active}))


class MasterLink:
    def __init__(
        self, state: StateDir, settings: ClientSettings, *, clock: Clock = SYSTEM_CLOCK
    ) -> None:
        self.state = state
        self.settings = settings
        self.clock = clock
        self.limits: Limits = settings.limits
        self.capabilities: tuple[str, ...] = tuple(settings.capabilities) + agent_kinds(settings)
        self.versions = {"limits": 1, "capabilities": 1}
        self._http: aiohttp.ClientSession | None = None

    # --- what sessions pin -------------------------------------------------------------------

    def pinned(self) -> PinnedConfig:
        """The snapshot last synced (A-09): a new session keeps it until it ends."""
        return PinnedConfig(
            limits=self.limits,
            capabilities=self.capabilities,
            limits_version=self.versions["limits"],
            capabilities_version=self.versions["capabilities"],
        )

    # --- pairing -----------------------------------------------------------------------------

    async def pair(self, pairing_url: str, device_name: str, client_pair: Any) -> dict[str, Any]:
        base, token = parse_pairing_url(pairing_url, dev=self.settings.dev)
        if not 0 < len(device_name) <= 100:
            raise MasterLinkError("the device name must be 1 to 100 characters")
        body = PairRequest(
            pairing_token=token,
            client_address=self.settings.address,
            device_name=device_name,
            client_credentials=client_pair.to_body(),
        )
        url = f"{base}/v1/auth/pair"
        status, answer, _ = await self._send("POST", url, body.wire(), token=None)
        if status != 200:
            raise MasterLinkError(f"pairing refused ({status}): {_message(answer)}")
        self._store_tokens(answer, master_url=base)
        await self.sync_on_start()
        return answer

    def _store_tokens(self, answer: Any, *, master_url: str | None = None) -> None:
        creds = self.state.credentials
        try:
            grant = TokenGrant.model_validate(answer)
        except ValidationError:
            grant = None
        # Pairing must bring the key; a refresh may leave it out and keep the paired one.
        key = grant and (
            grant.server_credentials or (master_url is None and creds.server_credentials)
        )
        if grant is None or not key:
            raise MasterLinkError("the master's answer lacks tokens or server_credentials")
        try:
            claims = verify_peer(grant.access_token, key, clock=self.clock)
        except Unauthorized as exc:
            raise MasterLinkError(f"the master's token does not verify: {exc.message}") from None
        if master_url is not None:
            creds.master_url = master_url
        creds.node_id = grant.node_id or claims.get("sub") or creds.node_id
        creds.access_token = grant.access_token
        creds.refresh_token = grant.refresh_token
        creds.server_credentials = key
        self.state.save()

    async def unpair(self) -> None:
        """§3.5 (C-AUTH-04): leave the network; the master answers 204 and forgets us."""
        status, answer, _ = await self.call("DELETE", "/v1/nodes/self")
        if status not in (204, 404):  # 404: the master already forgot this node
            raise MasterLinkError(f"unpairing refused ({status}): {_message(answer)}")
        creds = self.state.credentials
        creds.master_url = creds.node_id = creds.access_token = creds.refresh_token = None
        creds.server_credentials = None
        creds.client_refresh_fingerprint = None  # the master's tokens for us die too
        self.state.save()

    # --- config scopes -----------------------------------------------------------------------

    async def sync_on_start(self) -> None:
        """C-CFG-01/02: both scopes, version 1."""
        self.versions = {"limits": 1, "capabilities": 1}
        try:
            await self._put_scope("limits")
            await self._put_scope("capabilities")
        except MasterLinkError as exc:
            log.warning("config sync with the master failed: %s", exc)
            raise
        log.info(
            "config synced with the master: limits v%d, capabilities v%d",
            self.versions["limits"],
            self.versions["capabilities"],
        )

    async def change_limits(self, limits: Limits, reason: str | None = None) -> None:
        if limits == self.limits:
            return  # C-CFG-03: an unchanged scope is not resent
        self.limits = limits
        self.versions["limits"] += 1
        await self._put_scope("limits", reason)

    async def change_capabilities(self, capabilities: tuple[str, ...], reason: str | None = None):
        if tuple(capabilities) == self.capabilities:
            return
        self.capabilities = tuple(capabilities)
        self.versions["capabilities"] += 1
        await self._put_scope("capabilities", reason)

    def _snapshot(self, scope: str, reason: str | None) -> dict[str, Any]:
        limits = scope == "limits"
        return ConfigSnapshot(
            config_version=self.versions[scope],
            effective_at=iso(self.clock.now()),
            reason=reason or None,
            limits=self.limits.model_dump() if limits else None,  # C-CFG-04: every field
            capabilities=None if limits else list(self.capabilities),
        ).wire()

    async def _put_scope(self, scope: str, reason: str | None = None) -> None:
        for _ in range(MAX_CONFLICT_RETRIES):
            status, answer, _ = await self.call(
                "PUT", f"/v1/nodes/config/{scope}", self._snapshot(scope, reason)
            )
            if status == 200:
                return
            current = answer.get("current_config_version") if isinstance(answer, dict) else None
            if status == 409 and isinstance(current, int):
                self.versions[scope] = current + 1  # K-02
                continue
            raise MasterLinkError(f"PUT {scope} refused ({status}): {_message(answer)}")
        raise MasterLinkError(f"PUT {scope}: the version kept conflicting")

    # --- authenticated calls -----------------------------------------------------------------

    async def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any, Any]:
        creds = self.state.credentials
        if not creds.paired:
            raise MasterLinkError("this client is not paired; run `rawp client pair <url>`")
        url = f"{creds.master_url}{path}"
        status, answer, headers = await self._send(method, url, body, token=creds.access_token)
        if status == 401:  # §3.4: refresh once, retry once
            await self.refresh()
            status, answer, headers = await self._send(
                method, url, body, token=self.state.credentials.access_token
            )
        return status, answer, headers

    async def refresh(self) -> None:
        creds = self.state.credentials
        status, answer, _ = await self._send(
            "POST",
            f"{creds.master_url}/v1/auth/refresh",
            RefreshRequest(refresh_token=creds.refresh_token).wire(),
            token=None,
        )
        if status != 200:
            raise MasterLinkError(f"token refresh refused ({status}): {_message(answer)}")
        self._store_tokens(answer)

    async def _send(
        self, method: str, url: str, body: Any, *, token: str | None
    ) -> tuple[int, Any, Any]:
        if self._http is None:
            self._http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30))
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        try:
            async with self._http.request(method, url, json=body, headers=headers) as response:
                warning = response.headers.get("Warning")
                if warning:  # X-COMP-03: e.g. a deprecated endpoint
                    log.warning("master warns on %s %s: %s", method, url, warning)
                try:
                    answer = await response.json(content_type=None)
                except ValueError:
                    answer = None
                return response.status, answer, response.headers
        except aiohttp.ClientError as exc:
            raise MasterLinkError(f"cannot reach the master at {url}: {exc}") from None

    async def close(self) -> None:
        if self._http is not None:
            await self._http.close()
            self._http = None


def _message(answer: Any) -> str:
    if isinstance(answer, dict):
        return f"{answer.get('error_code', '')} {answer.get('message', '')}".strip()
    return "no JSON body"
