"""The web edge's cookie session and origin checks (issue 21; docs/web.md "Security").

Rules:

1. After a login link is redeemed (gateway.storage.web_logins) the browser holds cookie `rawp_web`:
   `<payload>.<signature>`, the payload the subject, display name and expiry (`SESSION_TTL_S`,
   12 hours), the signature HMAC-SHA256. It is HttpOnly (no script reads it), SameSite=Strict
   (no other site's page sends it), Path=/, and Secure when the request came over https — by
   itself or through a TLS proxy saying `X-Forwarded-Proto: https`, or when the public URL is
   https. Trusting that header can only add Secure, never remove it.
2. The signing key is derived from the edge secret (HMAC of a fixed label), so every gateway
   replica with the same secret accepts the others' cookies, and rotating the edge secret
   signs everyone out. The cookie never contains the secret, an edge token or a ticket.
3. Every /api call and the WebSocket upgrade verify the cookie (signature in constant time,
   then expiry). Logging out clears the cookie in that browser; a copied cookie stays valid
   until it expires (nothing is stored server-side to revoke).
4. Origins: the WebSocket upgrade must carry an `Origin` equal to this server's own origin (the
   scheme — `X-Forwarded-Proto` when a proxy set it — and `Host`) or to the public URL's; a
   browser always sends it, so a missing one is refused too. Requests that change something
   (POST, DELETE) are refused when they carry a foreign `Origin`; SameSite=Strict already keeps
   the cookie off other sites' requests, this is the second lock.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

import orjson
from aiohttp import web

COOKIE = "rawp_web"
SESSION_TTL_S = 12 * 3600.0
KEY_LABEL = b"rawp web edge cookie v1"


@dataclass(frozen=True)
class WebUser:
    subject: str
    name: str


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class CookieSigner:
    def __init__(self, edge_secret: str, *, ttl_s: float = SESSION_TTL_S, now=time.time) -> None:
        self._key = hmac.new(edge_secret.encode(), KEY_LABEL, hashlib.sha256).digest()  # rule 2
        self.ttl_s = ttl_s
        self._now = now

    def __repr__(self) -> str:
        return "CookieSigner(…)"  # never the key

    def _sign(self, payload: str) -> str:
        return _b64(hmac.new(self._key, payload.encode(), hashlib.sha256).digest())

    def make(self, user: WebUser) -> str:
        body = {"s": user.subject, "n": user.name, "e": int(self._now() + self.ttl_s)}
        payload = _b64(orjson.dumps(body))
        return f"{payload}.{self._sign(payload)}"

    def read(self, value: str | None) -> WebUser | None:
        """The signed-in user of a cookie value; None when absent, forged or expired (rule 3)."""
        if not value or value.count(".") != 1 or len(value) > 4096:
            return None
        payload, signature = value.split(".")
        if not hmac.compare_digest(signature, self._sign(payload)):
            return None
        try:
            body = orjson.loads(_unb64(payload))
            subject, name, expires = str(body["s"]), str(body["n"]), float(body["e"])
        except (ValueError, KeyError, TypeError):
            return None
        if expires <= self._now():
            return None
        return WebUser(subject, name)


def forwarded_https(request: web.Request) -> bool:
    proto = request.headers.get("X-Forwarded-Proto", "").split(",")[0].strip().lower()
    return request.scheme == "https" or proto == "https"


def set_cookie(
    response: web.StreamResponse, request: web.Request, value: str, *, ttl_s: float, https: bool
) -> None:
    """Rule 1's attributes; `https`: the public URL is https (a proxy in front)."""
    response.set_cookie(
        COOKIE,
        value,
        max_age=int(ttl_s),
        path="/",
        httponly=True,
        samesite="Strict",
        secure=https or forwarded_https(request),
    )


def clear_cookie(response: web.StreamResponse) -> None:
    response.del_cookie(COOKIE, path="/")


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def own_origins(request: web.Request, public_url: str) -> set[str]:
    """Rule 4: this server as the browser reached it, and as the public URL names it."""
    scheme = "https" if forwarded_https(request) else "http"
    return {f"{scheme}://{request.host}".lower(), origin_of(public_url)}


def same_origin(request: web.Request, public_url: str, *, required: bool) -> bool:
    origin = request.headers.get("Origin")
    if origin is None:
        return not required
    return origin.lower() in own_origins(request, public_url)
