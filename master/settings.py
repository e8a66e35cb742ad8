"""Everything the master is configured with: what the operator sets, and the frozen runtime object.

`MasterOptions` is the one place a `rawp master` setting is written — its variable, flag,
default, range and help (runtime.settings explains how to add one). `master.cli` loads it from
flags and the environment and turns it into `Settings` with `runtime()`; tests and `rawp up`
build `Settings` directly. `Settings` also holds the tunables no operator sets (token lifetimes
fixed by the spec, replay sizes); its operator-facing defaults are read from `MasterOptions`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, BeforeValidator, Field, SecretStr, model_validator
from pydantic_settings import NoDecode

from master.services.budget_rules import BudgetRules
from runtime.rate_limit import Budget
from runtime.settings import (
    Accepts,
    CommandSettings,
    Flag,
    Names,
    Port,
    RedisUrl,
    check_tls_pair,
    comma_list,
    dev_setting,
    metrics_token_setting,
    setting,
)


def _rate(text: str) -> str:
    Budget.parse(text)  # raises ValueError with the accepted forms
    return text.strip()


Rate = Annotated[str, AfterValidator(_rate), Accepts("a rate like 20/s, 10/min or 600/h")]


def _user_rates(items: tuple[str, ...]) -> tuple[str, ...]:
    for item in items:
        subject, sep, rate = item.rpartition("=")  # a subject may hold "=", a rate never does
        if not sep or not subject.strip():
            raise ValueError(f"each entry looks like 'discord:123=100/s', not {item!r}")
        _rate(rate)
    return items


UserRates = Annotated[
    tuple[str, ...],
    NoDecode,
    BeforeValidator(comma_list),
    AfterValidator(_user_rates),
    Accepts("comma-separated subject=rate pairs, e.g. discord:123=100/s"),
]


def user_budgets(items: tuple[str, ...]) -> dict[str, Budget]:
    """`("a:1=100/s",)` → {"a:1": Budget}: the users whose Edge API budget is not the default."""
    pairs = (item.rpartition("=") for item in items)
    return {subject.strip(): Budget.parse(rate) for subject, _, rate in pairs}


Seconds = Annotated[int, Field(gt=0), Accepts("a whole number of seconds above 0")]


class MasterOptions(CommandSettings):
    """`rawp master`'s settings (docs/operations-master.md has the generated table)."""

    host: str = setting(
        "127.0.0.1", env="RAWP_MASTER_HOST", flag="--host", help="address to listen on"
    )
    port: Port = setting(8700, env="RAWP_MASTER_PORT", flag="--port", help="port to listen on")
    database_url: Annotated[SecretStr | None, Accepts("an SQLAlchemy URL (kept secret)")] = setting(
        None,
        env="RAWP_DATABASE_URL",
        flag="--database-url",
        help="SQLAlchemy URL of the master's database; none: an SQLite file in the state directory",
        example="postgresql+asyncpg://rawp:password@db:5432/rawp",
    )
    database_password: SecretStr | None = setting(
        None,
        env="RAWP_DATABASE_PASSWORD",
        help="password of RAWP_DATABASE_URL's user, any characters, put into the URL escaped "
        "(instead of a password in the URL, where @ % / : # ? must be %-escaped); it wins over "
        "one in the URL. Read from the environment only",
    )
    database_wait: Annotated[float, Field(ge=0, le=3600)] = setting(
        60.0,
        env="RAWP_DATABASE_WAIT",
        flag="--database-wait",
        help="seconds the master waits at start for its database to answer (compose may start "
        "it first); then it exits with one line saying why it cannot reach it",
    )
    dev: Flag = dev_setting("http:// and loopback client addresses")
    state_dir: Path = setting(
        Path(".rawp"),
        env="RAWP_MASTER_STATE_DIR",
        flag="--state-dir",
        help="where the signing key (master-signing-key.pem, mode 0600) and the SQLite "
        "database live",
    )
    tls_cert: Path | None = setting(
        None,
        env="RAWP_MASTER_TLS_CERT",
        flag="--tls-cert",
        help="PEM certificate chain to serve HTTPS with (with the key)",
    )
    tls_key: Path | None = setting(
        None, env="RAWP_MASTER_TLS_KEY", flag="--tls-key", help="PEM private key of the certificate"
    )
    public_url: str | None = setting(
        None,
        env="RAWP_MASTER_PUBLIC_URL",
        flag="--public-url",
        help="base URL clients and people reach the master at, used in pairing URLs; none: "
        "from host, port and TLS",
        example="https://rawp.example.com",
    )
    node_rate_limit: Rate = setting(
        "20/s",
        env="RAWP_MASTER_NODE_RATE_LIMIT",
        flag="--node-rate-limit",
        help="requests each node token may make (429 + Retry-After beyond)",
    )
    auth_rate_limit: Rate = setting(
        "10/min",
        env="RAWP_MASTER_AUTH_RATE_LIMIT",
        flag="--auth-rate-limit",
        help="pair and refresh requests per remote address (unauthenticated routes)",
    )
    access_token_ttl: Seconds = setting(
        900,
        env="RAWP_MASTER_ACCESS_TOKEN_TTL",
        flag="--access-token-ttl",
        help="lifetime of the access tokens the master issues to nodes, in seconds",
    )
    redis_url: RedisUrl = setting(
        None,
        env="RAWP_REDIS_URL",
        flag="--redis-url",
        help="Redis shared by several master replicas (docs/scale-out.md); none: one master "
        "process, nothing shared",
        example="redis://127.0.0.1:6379/0",
    )
    redis_prefix: str = setting(
        "rawp:",
        env="RAWP_REDIS_PREFIX",
        flag="--redis-prefix",
        help="start of every Redis key the master writes (several deployments, one Redis)",
    )
    # --- Edge API (RAWP §9; docs/edge-api.md) ---
    edge_secret: SecretStr | None = setting(
        None,
        env="RAWP_EDGE_SECRET",
        help="the edge service credential a gateway trades for user tokens (POST "
        "/v1/edge/auth/token); none disables that exchange. A long random secret, read from "
        "the environment only so it never shows in a process list; the gateway needs the same",
    )
    edge_token_ttl: Seconds = setting(
        900,
        env="RAWP_EDGE_TOKEN_TTL",
        flag="--edge-token-ttl",
        help="lifetime of the user access tokens issued to edges, in seconds",
    )
    edge_oidc_issuer: str | None = setting(
        None,
        env="RAWP_EDGE_OIDC_ISSUER",
        flag="--edge-oidc-issuer",
        help="accept user JWTs from this OIDC issuer (with its JWKS URL and audience)",
    )
    edge_oidc_jwks_url: str | None = setting(
        None,
        env="RAWP_EDGE_OIDC_JWKS_URL",
        flag="--edge-oidc-jwks-url",
        help="the issuer's JWKS URL",
    )
    edge_oidc_audience: str | None = setting(
        None,
        env="RAWP_EDGE_OIDC_AUDIENCE",
        flag="--edge-oidc-audience",
        help="the audience the issuer's tokens must name",
    )
    edge_deny_tools: Names = setting(
        ("*",),
        env="RAWP_EDGE_DENY_TOOLS",
        flag="--edge-deny-tools",
        help="security policy: tool_overrides edges may not ask for; * = every one",
    )
    edge_deny_commands: Names = setting(
        (),
        env="RAWP_EDGE_DENY_COMMANDS",
        flag="--edge-deny-commands",
        help="security policy: commands (without /) edges may not send, as text or slash_command",
    )
    lease_seconds: Annotated[float, Field(ge=0.3, le=600)] = setting(
        5.0,
        env="RAWP_LEASE_SECONDS",
        flag="--lease-seconds",
        help="with several replicas: a session's lease outlives its holder's last renewal this "
        "long; a dead replica's sessions are taken over within about this plus the sweep",
    )
    takeover_sweep_seconds: Annotated[float, Field(ge=0.1, le=600)] = setting(
        2.0,
        env="RAWP_TAKEOVER_SWEEP_SECONDS",
        flag="--takeover-sweep-seconds",
        help="with several replicas: how often each looks for sessions nobody holds",
    )
    delivery_seconds: Annotated[float, Field(ge=0.1, le=600)] = setting(
        5.0,
        env="RAWP_DELIVERY_SECONDS",
        flag="--delivery-seconds",
        help="how long an edge frame may wait to reach the client (a reattach, another "
        "replica) before the edge is told CLIENT_UNAVAILABLE and may resend it",
    )
    edge_queue_bytes: Annotated[int, Field(gt=0)] = setting(
        16 * 1024 * 1024,
        env="RAWP_EDGE_QUEUE_BYTES",
        flag="--edge-queue-bytes",
        help="backlog (bytes of frame text) of one edge socket before a too-slow edge is cut "
        "off (1013)",
    )
    edge_user_rate_limits: UserRates = setting(
        (),
        env="RAWP_EDGE_USER_RATE_LIMITS",
        flag="--edge-user-rate-limits",
        help="Edge API requests per second for named users instead of the default 30/s "
        "(a load generator, a trusted bot); everyone else keeps the default",
        example="discord:123=100/s",
    )
    budgets: Path | None = setting(
        None,
        env="RAWP_BUDGETS_FILE",
        flag="--budgets",
        help="TOML file of spending budgets per user and node, read at start "
        "(docs/operations-master.md, Budgets); none: nothing is limited",
    )
    metrics_token: SecretStr | None = metrics_token_setting()

    @model_validator(mode="after")
    def _together(self) -> MasterOptions:
        check_tls_pair(self)
        if self.database_password is not None and self.database_url is None:
            raise ValueError("RAWP_DATABASE_PASSWORD needs RAWP_DATABASE_URL (--database-url)")
        oidc = (self.edge_oidc_issuer, self.edge_oidc_jwks_url, self.edge_oidc_audience)
        if any(oidc) and not all(oidc):
            raise ValueError(
                "RAWP_EDGE_OIDC_ISSUER, RAWP_EDGE_OIDC_JWKS_URL and RAWP_EDGE_OIDC_AUDIENCE "
                "(--edge-oidc-*) go together"
            )
        return self

    def runtime(self, state_dir: Path, budgets: BudgetRules | None = None) -> Settings:
        """The master's runtime settings; `state_dir` is the checked, usable directory and
        `budgets` the rules read from the `budgets` file (master.cli reads it)."""
        from master.storage.db import with_password  # imports SQLAlchemy: not for --help

        return Settings(
            state_dir=state_dir,
            host=self.host,
            port=self.port,
            database_url=with_password(_plain(self.database_url), _plain(self.database_password)),
            database_wait=self.database_wait,
            dev=self.dev,
            tls_cert=self.tls_cert,
            tls_key=self.tls_key,
            public_url=self.public_url,
            access_token_ttl=self.access_token_ttl,
            node_budget=Budget.parse(self.node_rate_limit),
            auth_budget=Budget.parse(self.auth_rate_limit),
            redis_url=_plain(self.redis_url),
            redis_prefix=self.redis_prefix,
            metrics_token=_plain(self.metrics_token),
            edge=EdgeSettings(
                secret=_plain(self.edge_secret),
                user_token_ttl=self.edge_token_ttl,
                oidc_issuer=self.edge_oidc_issuer,
                oidc_jwks_url=self.edge_oidc_jwks_url,
                oidc_audience=self.edge_oidc_audience,
                deny_tools=self.edge_deny_tools,
                deny_commands=self.edge_deny_commands,
                queue_bytes=self.edge_queue_bytes,
                lease_seconds=self.lease_seconds,
                takeover_sweep_seconds=self.takeover_sweep_seconds,
                delivery_seconds=self.delivery_seconds,
                user_budgets=user_budgets(self.edge_user_rate_limits),
                budgets=budgets if budgets is not None else BudgetRules(),
            ),
        )


def _plain(secret: SecretStr | None) -> str | None:
    return secret.get_secret_value() if secret is not None else None


DEFAULTS = MasterOptions()  # the operator-facing defaults, for the runtime objects below
NODE_BUDGET = Budget.parse(DEFAULTS.node_rate_limit)  # per node token
USER_BUDGET = Budget.parse("30/s")  # per edge user (Edge API)
AUTH_BUDGET = Budget.parse(DEFAULTS.auth_rate_limit)  # per remote address on pair / refresh


@dataclass(frozen=True)
class EdgeSettings:
    """The Edge API's settings (RAWP §9), grouped so `Settings` stays readable."""

    # §9.1: the edge service credential a gateway trades for user tokens; None disables it.
    secret: str | None = field(default=None, repr=False)
    user_token_ttl: int = DEFAULTS.edge_token_ttl
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
    deny_tools: tuple[str, ...] = DEFAULTS.edge_deny_tools
    deny_commands: tuple[str, ...] = DEFAULTS.edge_deny_commands
    # Backpressure: characters of frames queued for one edge socket before it is disconnected.
    queue_bytes: int = DEFAULTS.edge_queue_bytes
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
    lease_seconds: float = DEFAULTS.lease_seconds
    takeover_sweep_seconds: float = DEFAULTS.takeover_sweep_seconds
    # Issue 14 §2: how long an edge frame may wait to be written to the client's socket (for
    # a reattach, or for the replica holding the link to answer) before the edge is told
    # CLIENT_UNAVAILABLE and may resend it.
    delivery_seconds: float = DEFAULTS.delivery_seconds
    user_budget: Budget = USER_BUDGET
    # Users with an Edge API budget of their own instead of `user_budget` (subject → budget).
    user_budgets: Mapping[str, Budget] = field(default_factory=dict)
    # Issue 16 §4: spending budgets (the --budgets file; empty: nothing is limited).
    budgets: BudgetRules = field(default_factory=BudgetRules)

    def budget_of(self, user_id: str) -> Budget:
        """The Edge API rate budget of one user: their own if the operator set one."""
        return self.user_budgets.get(user_id, self.user_budget)


@dataclass(frozen=True)
class Settings:
    state_dir: Path
    host: str = DEFAULTS.host
    port: int = DEFAULTS.port
    # SQLAlchemy URL; None means an SQLite file in `state_dir`. It may hold a password.
    database_url: str | None = field(default=None, repr=False)
    # Seconds `rawp master` waits at start for the database to answer (issue 34 §2).
    database_wait: float = DEFAULTS.database_wait
    # §3.2 / K-01: allow http:// and loopback client addresses.
    dev: bool = False
    tls_cert: Path | None = None
    tls_key: Path | None = None
    # Base URL people and clients reach the master at, used in pairing URLs (§3.1).
    public_url: str | None = None
    # §3.4 token lifetimes, seconds.
    access_token_ttl: int = DEFAULTS.access_token_ttl
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
    redis_prefix: str = DEFAULTS.redis_prefix
    # GET /metrics needs `Authorization: Bearer <this>` when set; else loopback peers only
    # (runtime.scrape_access). Read from RAWP_METRICS_TOKEN only: never a flag.
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
