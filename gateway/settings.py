"""`rawp gateway`'s settings: the one place each is written (runtime.settings explains how to add
one). `gateway.cli` loads `GatewaySettings` from flags and the environment and
`rawp_app.launch.run_gateway` takes it as it is (`rawp up` builds one); the web edge's and the
console's settings are its groups `web` and `console`, the transcription service of voice
messages its group `voice` (gateway.sessions.voice). The platforms' own
settings (tokens, endpoints, allow-lists) are `DISCORD_*` / `SLACK_*`, read by their adapters
(adapters/discord/settings.py, adapters/slack/settings.py) when the gateway serves them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field, SecretStr, field_validator
from pydantic_settings import NoDecode

from gateway.replicas.platform_budget import parse_limits
from gateway.sessions.voice import VoiceSettings
from runtime.settings import (
    Accepts,
    CommandSettings,
    Flag,
    Names,
    Port,
    RedisUrl,
    SettingGroup,
    comma_list,
    setting,
)
from runtime.shared_settings import (
    edge_secret_setting,
    master_url_setting,
    metrics_token_setting,
    redis_url_setting,
)

WEEK_S = 7 * 24 * 3600
# gateway.approvals.interactions rule 5: an approval is denied after 10 minutes unless told
# otherwise.
DEFAULT_APPROVAL_TIMEOUT_S = 600.0
ApprovalTimeout = Annotated[
    float, Field(gt=0, le=WEEK_S), Accepts(f"a number of seconds above 0, at most {WEEK_S}")
]


# Settings `rawp up` shares with `rawp gateway` (the same variables, declared once here).
PLATFORM_NAMES = ("discord", "slack", "console", "web")
Platform = Annotated[
    tuple[Literal["discord", "slack", "console", "web"], ...],
    NoDecode,
    BeforeValidator(comma_list),
    Accepts("comma-separated platforms: discord, slack, console, web"),
]
DEFAULT_WEB_PORT = 8790


def platform_setting(help: str) -> Any:
    """RAWP_PLATFORM: the chat platforms to serve, for `rawp gateway` and `rawp up`."""
    return setting((), env="RAWP_PLATFORM", flag="--platform", help=help)


def web_host_setting() -> Any:
    return setting(
        "127.0.0.1",
        env="RAWP_WEB_HOST",
        flag="--web-host",
        help="address the web edge listens on (docs/web.md); keep loopback behind a TLS proxy",
    )


def web_public_url_setting() -> Any:
    return setting(
        None,
        env="RAWP_WEB_PUBLIC_URL",
        flag="--web-public-url",
        help="base URL people open the web edge at, used in login links and as the one origin "
        "its WebSocket accepts besides its own; none: http://<web host>:<web port>",
        example="https://rawp.example.com",
    )


def show_thinking_setting() -> Any:
    return setting(
        False,
        env="RAWP_GATEWAY_SHOW_THINKING",
        flag="--show-thinking",
        help="show the model's thinking as hidden (spoiler) messages; redacted thinking never "
        "shows",
    )


def approval_timeout_setting() -> Any:
    return setting(
        DEFAULT_APPROVAL_TIMEOUT_S,
        env="RAWP_GATEWAY_APPROVAL_TIMEOUT",
        flag="--approval-timeout",
        help="seconds an approval waits when the agent names no timeout; then it is denied "
        "(every answer, refusal and expiry is in `rawp master audit`)",
    )


def parse_address(text: str) -> tuple[str, int]:
    """`host:port` (IPv6 as `[::1]:9464`) of the metrics listener; ValueError if malformed."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"expected host:port, e.g. 127.0.0.1:9464, not {text!r}")
    return host.strip("[]"), int(port)


def _address(text: str | None) -> str | None:
    if text is not None:
        parse_address(text)  # raises ValueError saying what it accepts
    return text


Address = Annotated[str | None, AfterValidator(_address), Accepts("host:port, e.g. 127.0.0.1:9464")]


def _platform_limits(value: str) -> str:
    parse_limits(value)  # said at start-up, not at the first post
    return value


LimitOverrides = Annotated[
    str, AfterValidator(_platform_limits), Accepts("route=rate, …, e.g. global=5/s")
]


class WebSettings(SettingGroup):
    """The web edge's settings (docs/web.md): `GatewaySettings.web`, taken by
    adapters.web.WebEdge as they are."""

    port: Port = setting(
        DEFAULT_WEB_PORT,
        env="RAWP_WEB_PORT",
        flag="--web-port",
        help="port of the web edge (with --platform …,web; docs/web.md); 0: any free one",
    )
    host: str = web_host_setting()
    public_url: str | None = web_public_url_setting()  # None: http://<host>:<bound port>
    login_for: str | None = setting(
        None,
        env="RAWP_WEB_LOGIN_FOR",
        flag="--web-login-for",
        help="print a one-time web sign-in link for this chat subject when the web edge "
        "starts (valid 10 minutes), e.g. with the web edge alone; chat users get theirs with "
        "/rawp web",
        example="discord:123456789012345678",
    )


class ConsoleSettings(SettingGroup):
    """The console conversation's settings: `GatewaySettings.console` (its own --help group)."""

    user: str = setting(
        "local",
        env="RAWP_CONSOLE_USER",
        flag="--user",
        help="the console user; its master user is console:<user>",
    )
    node: str | None = setting(
        None,
        env="RAWP_CONSOLE_NODE",
        flag="--node",
        help="machine the console session starts on, by id or device name; none: the first "
        "online one",
    )
    agent: str = setting(
        "demo", env="RAWP_CONSOLE_AGENT", flag="--agent", help="agent the console session starts"
    )


DEFAULT_AGENTS = ("demo",)


class GatewaySettings(CommandSettings):
    """`rawp gateway`'s settings (docs/operations-gateway.md has the generated table), taken
    by rawp_app.launch.run_gateway as they are."""

    master_url: str = master_url_setting("base URL of the master's Edge API")
    edge_secret: SecretStr | None = edge_secret_setting(
        "the master's edge service credential (the same value the master has); read "
        "from the environment only"
    )
    platform: Platform = platform_setting(
        "chat platforms, e.g. slack,web; none: every platform whose token is configured "
        "(DISCORD_BOT_TOKEN, SLACK_BOT_TOKEN), else the console"
    )
    web: WebSettings = Field(default_factory=WebSettings)
    state_dir: Path = setting(
        Path(".rawp/gateway"),
        env="RAWP_GATEWAY_STATE_DIR",
        flag="--state-dir",
        help="where the conversation ↔ session database (conversations.sqlite3) lives; it "
        "also keeps each user's last machine and agent, the default of a mention or DM start",
    )
    database_url: Annotated[SecretStr | None, Accepts("an SQLAlchemy URL (kept secret)")] = setting(
        None,
        env="RAWP_GATEWAY_DATABASE_URL",
        flag="--database-url",
        help="SQLAlchemy URL of the conversation store shared by several gateway replicas "
        "(docs/scale-out.md); none: conversations.sqlite3 in the state directory",
        example="postgresql+asyncpg://rawp@db:5432/rawp_gateway",
    )
    redis_url: RedisUrl = redis_url_setting(
        "Redis shared by several gateway replicas: session leases, cross-replica "
        "signals, Discord shard leases and the platform rate budget (docs/scale-out.md); "
        "none: one gateway process, nothing shared"
    )
    redis_prefix: str = setting(
        "rawp:gw:",
        env="RAWP_GATEWAY_REDIS_PREFIX",
        flag="--redis-prefix",
        help="start of every Redis key the gateway writes (several deployments, one Redis)",
    )
    platform_limits: LimitOverrides = setting(
        "",
        env="RAWP_GATEWAY_PLATFORM_LIMITS",
        flag="--platform-limits",
        help="overrides of the platform budget's table (docs/scale-out.md, one platform "
        "budget), e.g. 'global=5/s,chat.postMessage=2/s'; '*=…' sets every route; none: "
        "the platforms' published limits",
    )
    agents: Names = setting(
        DEFAULT_AGENTS,
        env="RAWP_GATEWAY_AGENTS",
        flag="--agents",
        help="agent names offered when starting a session (any other name may still be "
        "typed); a mention or DM may name one of these (on <machine> <agent>), and when only "
        "one is listed it is the default",
    )
    workspace: str | None = setting(
        None,
        env="RAWP_GATEWAY_WORKSPACE",
        flag="--workspace",
        help="workspace path sessions start in; none: the node's own default workspace",
    )
    show_thinking: Flag = show_thinking_setting()
    approval_timeout: ApprovalTimeout = approval_timeout_setting()
    unredacted_nodes: Names = setting(
        (),
        env="RAWP_GATEWAY_UNREDACTED_NODES",
        flag="--unredacted-nodes",
        help="node ids whose sessions are shown without redacting credentials; none: every "
        "node is redacted (issue 15 §3)",
    )
    usage_footer: Flag = setting(
        False,
        env="RAWP_USAGE_FOOTER",
        flag="--usage-footer",
        help="end every turn with a line of its tokens, cost and context use (issue 16 §4)",
    )
    schedule_poll: Annotated[float, Field(ge=0.1, le=3600)] = setting(
        15.0,
        env="RAWP_GATEWAY_SCHEDULE_POLL_SECONDS",
        flag="--schedule-poll-seconds",
        help="how often the gateway asks the master whether a schedule made from chat has run, "
        "to post the run into a new thread (issue 30 §5, docs/schedules.md)",
    )
    voice: VoiceSettings = Field(default_factory=VoiceSettings)  # issue 30 §6
    metrics_address: Address = setting(
        None,
        env="RAWP_GATEWAY_METRICS_ADDRESS",
        flag="--metrics-address",
        help="host:port to serve GET /metrics and GET /health on (0.0.0.0:9464 in a container, "
        "with RAWP_METRICS_TOKEN); none: not served",
        example="127.0.0.1:9464",
    )
    metrics_token: SecretStr | None = metrics_token_setting()
    console: ConsoleSettings = Field(default_factory=ConsoleSettings)

    @field_validator("agents")
    @classmethod
    def _some_agents(cls, agents: tuple[str, ...]) -> tuple[str, ...]:
        return agents or DEFAULT_AGENTS  # an empty list (RAWP_GATEWAY_AGENTS=,): the default

    @property
    def database(self) -> Path:
        """The conversation store's SQLite file, when no `database_url` is set."""
        return self.state_dir / "conversations.sqlite3"

    @property
    def metrics_listen(self) -> tuple[str, int] | None:
        """(host, port) to serve GET /metrics and /health on; None: not served."""
        return parse_address(self.metrics_address) if self.metrics_address else None
