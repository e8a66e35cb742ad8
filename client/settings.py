"""Everything `rawp client` is configured with: one model, `ClientSettings`, taken by its services.

`ClientSettings` is the one place a `rawp client` setting is written — variable, flag, default,
range, help (runtime.settings explains how to add one); `client.cli` loads it, tests and
`rawp up` build it. Fields without a variable are tunables no operator sets; the limits scope,
the roots and the address are properties derived from the settings, never copies. The limits
(RAWP §4.1.5) and capabilities (§4.1.6) are the two config scopes the client reports to its
master; a session pins the snapshot current at its `session/init` (A-09). The limits' ranges
are the protocol model's own (rawp.config.Limits).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, SecretStr, model_validator
from pydantic_settings import NoDecode

from rawp.config import DEFAULT_LIMITS, Limits
from runtime.settings import Accepts, CommandSettings, Flag, Port, check_tls_pair, setting
from runtime.shared_settings import agents_file_setting, dev_setting, metrics_token_setting


def _paths(value: object) -> object:
    """RAWP_ALLOWED_ROOTS is split at ':' (os.pathsep); repeated flags arrive as a list."""
    if isinstance(value, str):
        return tuple(Path(part) for part in value.split(os.pathsep) if part)
    return value


def _limit(name: str):
    """A limit's range as the protocol model states it (rawp.config.Limits)."""
    return Limits.model_fields[name].metadata


Paths = Annotated[
    tuple[Path, ...],
    NoDecode,
    BeforeValidator(_paths),
    Accepts(f"directories separated by '{os.pathsep}'"),
]


class ClientSettings(CommandSettings):
    """`rawp client`'s settings (docs/operations-client.md has the generated table)."""

    host: str = setting(
        "127.0.0.1", env="RAWP_CLIENT_HOST", flag="--host", help="address to listen on"
    )
    port: Port = setting(8701, env="RAWP_CLIENT_PORT", flag="--port", help="port to listen on")
    agents_file: Path | None = agents_file_setting(
        "TOML file naming the agents this machine may run (docs/agents.md); none: the "
        "demo agent and the known agent CLIs found on PATH"
    )
    allowed_roots: Paths = setting(
        (),
        env="RAWP_ALLOWED_ROOTS",
        flag="--allow-root",
        repeat=True,
        help="directories sessions may work in (the flag once per directory); none: the "
        "current directory",
    )
    default_workspace: Path | None = setting(
        None,
        env="RAWP_CLIENT_DEFAULT_WORKSPACE",
        flag="--default-workspace",
        help="workspace offered to the master when a session names none; none: the first "
        "allowed root",
    )
    tls_cert: Path | None = setting(
        None,
        env="RAWP_CLIENT_TLS_CERT",
        flag="--tls-cert",
        help="PEM certificate: serve https/wss (with the key); without one, `rawp client` "
        "needs RAWP_DEV=1",
    )
    tls_key: Path | None = setting(
        None, env="RAWP_CLIENT_TLS_KEY", flag="--tls-key", help="PEM key of the certificate"
    )
    reattach_window: Annotated[int, *_limit("reattach_window")] = setting(
        DEFAULT_LIMITS.reattach_window,
        env="RAWP_CLIENT_REATTACH_WINDOW",
        flag="--reattach-window",
        help="seconds a session survives without its socket; 0 = it ends with the socket",
    )
    max_buffer_size: Annotated[int, *_limit("max_buffer_size")] = setting(
        DEFAULT_LIMITS.max_buffer_size,
        env="RAWP_CLIENT_MAX_BUFFER_SIZE",
        flag="--max-buffer-size",
        help="bytes of frames kept per session for replay after a reattach (at least the "
        "largest frame)",
    )
    max_frame_size: Annotated[int, *_limit("max_frame_size")] = setting(
        DEFAULT_LIMITS.max_frame_size,
        env="RAWP_CLIENT_MAX_FRAME_SIZE",
        flag="--max-frame-size",
        help="largest WebSocket frame in bytes; longer output is split",
    )
    buffer_policy: Literal["RING", "DROP"] = setting(
        DEFAULT_LIMITS.buffer_overflow_policy,
        env="RAWP_CLIENT_BUFFER_POLICY",
        flag="--buffer-policy",
        help="when the replay buffer is full: RING drops the oldest frames, DROP the newest",
    )
    rate_limit: Annotated[int, *_limit("rate_limit")] = setting(
        DEFAULT_LIMITS.rate_limit,
        env="RAWP_CLIENT_RATE_LIMIT",
        flag="--rate-limit",
        help="HTTP requests per second the client accepts from its master (429 beyond)",
    )
    kill_grace: Annotated[float, Field(ge=0, le=600)] = setting(
        5.0,
        env="RAWP_CLIENT_KILL_GRACE",
        flag="--kill-grace",
        help="seconds between SIGTERM and SIGKILL when a session's agent is ended (RAWP §5.2 "
        "says 5)",
    )
    # Also taken after `rawp client pair` / `unpair` (COMMON below).
    state_dir: Path = setting(
        Path(".rawp/client"),
        env="RAWP_CLIENT_STATE_DIR",
        flag="--state-dir",
        help="where the client keeps its signing key and pairing credentials (files mode 0600)",
    )
    public_address: str | None = setting(
        None,
        env="RAWP_CLIENT_ADDRESS",
        flag="--public-address",
        help="base URL the master calls (client_address); none: scheme://host:port",
        example="https://laptop.lan:8701",
    )
    dev: Flag = dev_setting("http:// and loopback addresses")
    metrics_token: SecretStr | None = metrics_token_setting()
    # --- runtime-only (no variable, no flag) ---
    # The capabilities scope (§4.1.6) before the agents file adds `agent_kind.<kind>` for each
    # kind it configures (see MasterLink).
    capabilities: tuple[str, ...] = ("rawp_dps_1.0", "file_search_v1")
    # §5.1 / K-12: the master's ticket is accepted for this long and burned on first use.
    ticket_ttl: float = 60.0
    # dps-profile §6: prompts queued behind a running turn, past which TURN_QUEUE_FULL.
    turn_queue_max: int = 8
    # Lifetime of the access tokens this client signs for its master (client_credentials).
    access_token_ttl: int = 3600
    # How often (real seconds) expired tickets and reattach windows are swept.
    sweep_interval: float = 0.25
    max_body_bytes: int = 1024 * 1024

    @model_validator(mode="after")
    def _consistent(self) -> ClientSettings:
        check_tls_pair(self)
        if self.max_buffer_size < self.max_frame_size:
            raise ValueError(
                "RAWP_CLIENT_MAX_BUFFER_SIZE (--max-buffer-size) must be at least "
                "RAWP_CLIENT_MAX_FRAME_SIZE (--max-frame-size)"
            )
        return self

    @property
    def roots(self) -> list[Path]:
        """The directories sessions may work in: `allowed_roots`, else the current one."""
        return list(self.allowed_roots) or [Path.cwd()]

    @property
    def limits(self) -> Limits:
        """The limits scope (§4.1.5) this client reports to its master."""
        return Limits(
            rate_limit=self.rate_limit,
            max_frame_size=self.max_frame_size,
            reattach_window=self.reattach_window,
            max_buffer_size=self.max_buffer_size,
            buffer_overflow_policy=self.buffer_policy,
        )

    @property
    def address(self) -> str:
        """`client_address` (A-02): a base URL with scheme."""
        if self.public_address:
            return self.public_address.rstrip("/")
        scheme = "https" if self.tls_cert else "http"
        return f"{scheme}://{self.host}:{self.port}"


# The options `rawp client pair` and `unpair` take after their own name too.
COMMON = ("state_dir", "public_address", "dev")
