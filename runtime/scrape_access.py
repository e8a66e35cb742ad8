"""Who may read a tier's `/metrics` (docs/operations-master.md, "Metrics").

Metrics hold no secret, but they do tell how busy a deployment is, so they are not public:

1. With a scrape token configured (`RAWP_METRICS_TOKEN`), a request must carry
   `Authorization: Bearer <token>`; nothing else is accepted, from anywhere.
2. Without one, only a direct loopback peer may read them: the remote address is loopback and
   the request carries no `X-Forwarded-For` / `Forwarded` header — a TLS proxy on the same
   host connects from loopback too, and what it forwards came from elsewhere.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Mapping


def is_loopback(address: str | None) -> bool:
    try:
        return ipaddress.ip_address((address or "").strip("[]")).is_loopback
    except ValueError:
        return False


def may_scrape(remote_address: str | None, headers: Mapping[str, str], token: str | None) -> bool:
    if token:  # rule 1
        given = headers.get("Authorization") or headers.get("authorization") or ""
        return hmac.compare_digest(given.encode(), f"Bearer {token}".encode())
    forwarded = any(
        headers.get(name) for name in ("X-Forwarded-For", "Forwarded", "x-forwarded-for")
    )
    return is_loopback(remote_address) and not forwarded  # rule 2


REFUSAL = (
    "metrics are served to loopback peers only, or with Authorization: Bearer "
    "<RAWP_METRICS_TOKEN> when that is set"
)
