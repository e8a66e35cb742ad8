"""Everything `rawp client` is configured with, read once from flags and the environment.

The limits (RAWP §4.1.5) and capabilities (§4.1.6) here are the two config scopes the client
reports to its master; a session pins the snapshot current at its `session/init` (A-09).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from rawp.config import DEFAULT_LIMITS, Limits


@dataclass
class ClientSettings:
    state_dir: Path
    allowed_roots: list[Path]
    host: str = "127.0.0.1"
    port: int = 8701
    # Base URL the master calls (`client_address`, A-02); default http(s)://host:port.
    public_address: str | None = None
    agents_file: Path | None = None
    # Where a session starts when the master names no workspace (the master's A-21 decision
    # reads it from GET /v1/agents); default: the first allowed root.
    default_workspace: Path | None = None
    dev: bool = False
    certfile: Path | None = None
    keyfile: Path | None = None
    limits: Limits = DEFAULT_LIMITS
    # The capabilities scope (§4.1.6) before the agents file adds `agent_kind.<kind>` for each
    # kind it configures (see MasterLink).
    capabilities: tuple[str, ...] = ("rawp_dps_1.0", "file_search_v1")
    # §5.1 / K-12: the master's ticket is accepted for this long and burned on first use.
    ticket_ttl: float = 60.0
    # C-SESS-06: SIGTERM, then SIGKILL after this many seconds. 5 by the spec; tests shorten it.
    kill_grace: float = 5.0
    # dps-profile §6: prompts queued behind a running turn, past which TURN_QUEUE_FULL.
    turn_queue_max: int = 8
    # Lifetime of the access tokens this client signs for its master (client_credentials).
    access_token_ttl: int = 3600
    # How often (real seconds) expired tickets and reattach windows are swept.
    sweep_interval: float = 0.25
    max_body_bytes: int = 1024 * 1024
    # GET /metrics needs `Authorization: Bearer <this>` when set; else loopback peers only
    # (rawp.scrape_access). Read from RAWP_METRICS_TOKEN only: never a flag.
    metrics_token: str | None = field(default=None, repr=False)
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def address(self) -> str:
        """`client_address` (A-02): a base URL with scheme."""
        if self.public_address:
            return self.public_address.rstrip("/")
        scheme = "https" if self.certfile else "http"
        return f"{scheme}://{self.host}:{self.port}"
