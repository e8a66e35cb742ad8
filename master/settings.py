"""Everything the master is configured with: one model, `MasterSettings`, taken by its services.

`MasterSettings` is the one place a `rawp master` setting is written — its variable, flag,
default, range and help (runtime.settings explains how to add one). `master.cli` loads it from
flags and the environment; tests and `rawp up` build it directly. The Edge API's settings are
its `edge` group (`EdgeSettings`). Fields without a variable are the tunables no operator sets
(token lifetimes fixed by the spec, replay sizes); values derived from settings (a parsed rate,
the database URL with its password) are properties, never copies.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, BeforeValidator, Field, SecretStr, model_validator
from pydantic_settings import NoDecode

from master.edge.relay.replay_ring import SESSION_BYTES, TOTAL_BYTES
from master.services.budget_rules import BudgetRules
from runtime.rate_limit import Budget
from runtime.settings import (
    Accepts,
    CommandSettings,
    Flag,
    Names,
    Port,
    RedisUrl,
    SettingGroup,
    check_tls_pair,
    comma_list,
    plain,
    setting,
)
from runtime.shared_settings import (
    database_url_setting,
    dev_setting,
    edge_secret_setting,
    metrics_token_setting,
    redis_url_setting,
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


def parse_user_budgets(items: tuple[str, ...]) -> dict[str, Budget]:
    """`("a:1=100/s",)` → {"a:1": Budget}: the users whose Edge API budget is not the default."""
    pairs = (item.rpartition("=") for item in items)
    return {subject.strip(): Budget.parse(rate) for subject, _, rate in pairs}


Seconds = Annotated[int, Field(gt=0), Accepts("a whole number of seconds above 0")]


USER_BUDGET = Budget.parse("30/s")  # per edge user (Edge API)


class EdgeSettings(SettingGroup):
    """The Edge API's settings (RAWP §9; docs/edge-api.md): `MasterSettings.edge`."""

    secret: SecretStr | None = edge_secret_setting(
        "the edge service credential a gateway trades for user tokens (POST "
        "/v1/edge/auth/token); none disables that exchange. A long random secret, read from "
        "the environment only so it never shows in a process list; the gateway needs the same"
    )
    user_token_ttl: Seconds = setting(
        900,
        env="RAWP_EDGE_TOKEN_TTL",
        flag="--edge-token-ttl",
        help="lifetime of the user access tokens issued to edges, in seconds",
    )
    oidc_issuer: str | None = setting(
        None,
        env="RAWP_EDGE_OIDC_ISSUER",
        flag="--edge-oidc-issuer",
        help="accept user JWTs from this OIDC issuer (with its JWKS URL and audience)",
    )
    oidc_jwks_url: str | None = setting(
        None,
        env="RAWP_EDGE_OIDC_JWKS_URL",
        flag="--edge-oidc-jwks-url",
        help="the issuer's JWKS URL",
    )
    oidc_audience: str | None = setting(
        None,
        env="RAWP_EDGE_OIDC_AUDIENCE",
        flag="--edge-oidc-audience",
        help="the audience the issuer's tokens must name",
    )
    deny_tools: Names = setting(
        ("*",),
        env="RAWP_EDGE_DENY_TOOLS",
        flag="--edge-deny-tools",
        help="security policy: tool_overrides edges may not ask for; * = every one",
    )
    deny_commands: Names = setting(
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
    schedule_scan_seconds: Annotated[float, Field(ge=0.1, le=3600)] = setting(
        20.0,
        env="RAWP_SCHEDULE_SCAN_SECONDS",
        flag="--schedule-scan-seconds",
        help="how often each replica looks for scheduled prompts that are due (issue 30 §5); "
        "a run starts at most this long after its tick",
    )
    queue_bytes: Annotated[int, Field(gt=0)] = setting(
        16 * 1024 * 1024,
        env="RAWP_EDGE_QUEUE_BYTES",
        flag="--edge-queue-bytes",
        help="backlog (bytes of frame text) of one edge socket before a too-slow edge is cut "
        "off (1013)",
    )
    replay_bytes: Annotated[int, Field(ge=4096)] = setting(
        SESSION_BYTES,
        env="RAWP_EDGE_REPLAY_BYTES",
        flag="--edge-replay-bytes",
        help="bytes of each session's latest frames the master keeps for edges that reconnect "
        "(older ones come from the client's buffer); with RAWP_REDIS_URL Redis keeps them",
    )
    replay_total_bytes: Annotated[int, Field(ge=65536)] = setting(
        TOTAL_BYTES,
        env="RAWP_EDGE_REPLAY_TOTAL_BYTES",
        flag="--edge-replay-total-bytes",
        help="bytes of kept frames for all sessions together; past it the oldest go first, "
        "whichever session they belong to",
    )
    user_rate_limits: UserRates = setting(
        (),
        env="RAWP_EDGE_USER_RATE_LIMITS",
        flag="--edge-user-rate-limits",
        help="Edge API requests per second for named users instead of the default 30/s "
        "(a load generator, a trusted bot); everyone else keeps the default",
        example="discord:123=100/s",
    )
    budgets_file: Path | None = setting(
        None,
        env="RAWP_BUDGETS_FILE",
        flag="--budgets",
        help="TOML file of spending budgets per user and node, read at start "
        "(docs/operations-master.md, Budgets); none: nothing is limited",
    )
    # --- runtime-only (no variable, no flag) ---
    oidc_jwks_cache_seconds: int = 300
    oidc_min_refetch_seconds: float = 10.0  # an unknown kid refetches the JWKS at most this often
    # §9.4: edge_ws_ticket lifetime, seconds (single use).
    ticket_ttl: int = 60
    # E-WS-11: control message_ids remembered per session for de-duplication.
    dedupe_window: int = 4096
    # K-09: a node not heard from for this long is offline; health answers are reused this long.
    offline_after: int = 120
    health_cache_seconds: float = 5.0
    health_timeout: float = 3.0
    # Frames kept per session to replay to an edge reconnecting with `last_message_id`.
    replay_frames: int = 2048
    # Edge API requests each user may make, unless `user_rate_limits` names them.
    user_budget: Budget = USER_BUDGET
    # Issue 16 §4: spending budgets, read from `budgets_file` at start (empty: nothing limited).
    budgets: BudgetRules = Field(default_factory=BudgetRules)

    @model_validator(mode="before")
    @classmethod
    def _read_budgets(cls, data: object) -> object:
        """The budgets file is read once, when the settings are made: a file it cannot use
        stops the start with one line (the model's error), before anything listens."""
        if not isinstance(data, dict) or "budgets" in data:
            return data
        alias = cls.model_fields["budgets_file"].validation_alias
        path = data.get("budgets_file", data.get(alias))
        if path is None:
            return data
        from master.services.budget_rules import BudgetFileError, load_budgets

        try:
            return {**data, "budgets": load_budgets(Path(path))}
        except BudgetFileError as exc:
            raise ValueError(str(exc)) from None

    @model_validator(mode="after")
    def _oidc_together(self) -> EdgeSettings:
        if any(self.oidc) and not all(self.oidc):
            raise ValueError(
                "RAWP_EDGE_OIDC_ISSUER, RAWP_EDGE_OIDC_JWKS_URL and RAWP_EDGE_OIDC_AUDIENCE "
                "(--edge-oidc-*) go together"
            )
        return self

    @property
    def oidc(self) -> tuple[str | None, str | None, str | None]:
        return (self.oidc_issuer, self.oidc_jwks_url, self.oidc_audience)

    @property
    def user_budgets(self) -> dict[str, Budget]:
        """Users with an Edge API budget of their own instead of `user_budget`."""
        return parse_user_budgets(self.user_rate_limits)

    def budget_of(self, user_id: str) -> Budget:
        """The Edge API rate budget of one user: their own if the operator set one."""
        return self.user_budgets.get(user_id, self.user_budget)


class MasterSettings(CommandSettings):
    """`rawp master`'s settings (docs/operations-master.md has the generated table)."""

    host: str = setting(
        "127.0.0.1", env="RAWP_MASTER_HOST", flag="--host", help="address to listen on"
    )
    port: Port = setting(8700, env="RAWP_MASTER_PORT", flag="--port", help="port to listen on")
    database_url: Annotated[SecretStr | None, Accepts("an SQLAlchemy URL (kept secret)")] = (
        database_url_setting(
            "SQLAlchemy URL of the master's database; none: an SQLite file in the state directory",
            example="postgresql+asyncpg://rawp:password@db:5432/rawp",
        )
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
    redis_url: RedisUrl = redis_url_setting(
        "Redis shared by several master replicas (docs/scale-out.md); none: one master "
        "process, nothing shared"
    )
    redis_prefix: str = setting(
        "rawp:",
        env="RAWP_REDIS_PREFIX",
        flag="--redis-prefix",
        help="start of every Redis key the master writes (several deployments, one Redis)",
    )
    edge: EdgeSettings = Field(default_factory=EdgeSettings)
    metrics_token: SecretStr | None = metrics_token_setting()
    # --- runtime-only (no variable, no flag) ---
    # §3.4: a refresh token lives 30 days.
    refresh_token_ttl: int = 30 * 24 * 3600
    # §3.1: an unused pairing token is discarded 15 minutes after issue (M-PAIR-02).
    pairing_token_ttl: int = 15 * 60
    # Largest request body accepted, bytes (413 above).
    max_body_bytes: int = 256 * 1024
    # Throttle for calls to a client whose limits scope is not synced yet (requests/second).
    unsynced_client_rate: float = 1.0

    @model_validator(mode="after")
    def _together(self) -> MasterSettings:
        check_tls_pair(self)
        if self.database_password is not None and self.database_url is None:
            raise ValueError("RAWP_DATABASE_PASSWORD needs RAWP_DATABASE_URL (--database-url)")
        return self

    @property
    def database_address(self) -> str:
        """The SQLAlchemy URL to open: `database_url` with `database_password` put in, or the
        SQLite file in the state directory."""
        from master.storage.db import database_url, with_password  # SQLAlchemy: not for --help

        url = with_password(plain(self.database_url), plain(self.database_password))
        return database_url(url, self.state_dir)

    @property
    def node_budget(self) -> Budget:
        """§7.1: the rate budget of each node token."""
        return Budget.parse(self.node_rate_limit)

    @property
    def auth_budget(self) -> Budget:
        """§7.1: the rate budget per remote address on unauthenticated routes."""
        return Budget.parse(self.auth_rate_limit)

    @property
    def base_url(self) -> str:
        """Where people and clients reach the master, used in pairing URLs (§3.1)."""
        if self.public_url:
            return self.public_url.rstrip("/")
        scheme = "https" if self.tls_cert else "http"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{host}:{self.port}"
