"""Everything the master is configured with, in one frozen object.

`master.cli` fills it from flags and `RAWP_*` variables; tests and `rawp up` build it directly.
Defaults are the documented ones (docs/operations-master.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from master.services.budget_rules import BudgetRules
from master.services.rate_limit import Budget

NODE_BUDGET = Budget.parse("20/s")
USER_BUDGET = Budget.parse("30/s")  # per edge user (Edge API)  # per node token
AUTH_BUDGET = Budget.parse("10/min")  # per remote address on pair / refresh


@dataclass(frozen=True)
class EdgeSettings:
    """The Edge API's settings (RAWP §9), grouped so `Settings` stays readable."""

    # §9.1: the edge service credential a gateway trades for user tokens; None disables it.
    secret: str | None = field(default=None, repr=False)
    user_token_ttl: int = 900
    # Optional OIDC issuer whose JWTs are accepted as user tokens (all three, or none).
    oidc_issuer: str | None = None
    oidc_jwks_url: str | None = None
    oidc_audience: str | None = None
    oidc_jwks_cache_seconds: int = 300
    oidc_min_refetch_seconds: float = 10.0  # an unknown kid refetches the JWKS at most this often
    # §9.4: edge_ws_ticket lifetime, seconds (single use).
    ticket_ttl: int = 60
    # A-24 security policy: tool_overrides / slash commands an edge may not ask for.
    # "*" in deny_tools refuses every tool override.
    deny_tools: tuple[str, ...] = ("*",)
    deny_commands: tuple[str, ...] = ()
    # Backpressure: characters of frames queued for one edge socket before it is disconnected.
    queue_bytes: int = 16 * 1024 * 1024
    # E-WS-11: control message_ids remembered per session for de-duplication.
    dedupe_window: int = 4096
    # K-09: a node not heard from for this long is offline; health answers are reused this long.
    offline_after: int = 120
    health_cache_seconds: float = 5.0
    health_timeout: float = 3.0
    # Frames kept per session to replay to an edge reconnecting with `last_message_id`.
    replay_frames: int = 2048
    # Several replicas (docs/scale-out.md): how long a session's lease outlives its holder's
    # last renewal, and how often each replica looks for sessions nobody holds. Together they
    # bound how long a dead replica's sessions wait for another to take them over.
    lease_seconds: float = 5.0
    takeover_sweep_seconds: float = 2.0
    # Issue 14 §2: how long an edge frame may wait to be written to the client's socket (for
    # a reattach, or for the replica holding the link to answer) before the edge is told
    # CLIENT_UNAVAILABLE and may resend it.
    delivery_seconds: float = 5.0
    user_budget: Budget = USER_BUDGET
    # Issue 16 §4: spending budgets (the --budgets file; empty: nothing is limited).
    budgets: BudgetRules = field(default_factory=BudgetRules)


@dataclass(frozen=True)
class Settings:
    state_dir: Path
    host: str = "127.0.0.1"
    port: int = 8700
    # SQLAlchemy URL; None means an SQLite file in `state_dir`.
    database_url: str | None = None
    # §3.2 / K-01: allow http:// and loopback client addresses.
    dev: bool = False
    tls_cert: Path | None = None
    tls_key: Path | None = None
    # Base URL people and clients reach the master at, used in pairing URLs (§3.1).
    public_url: str | None = None
    # §3.4 token lifetimes, seconds.
    access_token_ttl: int = 900
    refresh_token_ttl: int = 30 * 24 * 3600
    # §3.1: an unused pairing token is discarded 15 minutes after issue (M-PAIR-02).
    pairing_token_ttl: int = 15 * 60
    # Largest request body accepted, bytes (413 above).
    max_body_bytes: int = 256 * 1024
    # §7.1 rate budgets: per node token, and per remote address on unauthenticated routes.
    node_budget: Budget = NODE_BUDGET
    auth_budget: Budget = AUTH_BUDGET
    # Throttle for calls to a client whose limits scope is not synced yet (requests/second).
    unsynced_client_rate: float = 1.0
    # Redis shared by master replicas (docs/scale-out.md); None = single process, no Redis.
    redis_url: str | None = field(default=None, repr=False)
    # Every key the master writes in Redis starts with this (several deployments, one Redis).
    redis_prefix: str = "rawp:"
    # GET /metrics needs `Authorization: Bearer <this>` when set; else loopback peers only
    # (rawp.scrape_access). Read from RAWP_METRICS_TOKEN only: never a flag.
    metrics_token: str | None = field(default=None, repr=False)
    # --- Edge API (RAWP §9; docs/edge-api.md) ---
    edge: EdgeSettings = field(default_factory=EdgeSettings)

    @property
    def base_url(self) -> str:
        if self.public_url:
            return self.public_url.rstrip("/")
        scheme = "https" if self.tls_cert else "http"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{host}:{self.port}"
