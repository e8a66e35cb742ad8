"""`rawp gateway`'s settings: the one place each is written (runtime.settings explains how to add
one). `gateway.cli` loads `GatewayOptions` from flags and the environment; the platforms' own
settings (tokens, endpoints, allow-lists) are `DISCORD_*` / `SLACK_*`, read by their adapters
(adapters/discord/settings.py, adapters/slack/settings.py) when the gateway serves them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field, SecretStr
from pydantic_settings import NoDecode

from gateway.replicas.platform_budget import parse_limits
from gateway.sessions.voice import (
    DEFAULT_MODEL,
    DEFAULT_TIMEOUT_S,
    URL_SETTING,
    VoiceConfig,
    check_url,
)
from runtime.settings import (
    Accepts,
    CommandSettings,
    Flag,
    Names,
    Port,
    RedisUrl,
    comma_list,
    metrics_token_setting,
    setting,
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

TranscribeUrl = Annotated[
    str | None, AfterValidator(check_url), Accepts("an http:// or https:// URL")
]
TranscribeTimeout = Annotated[
    float, Field(gt=0, le=600), Accepts("a number of seconds above 0, at most 600")
]


# Voice messages in (issue 30 §6): `rawp up` shares these with `rawp gateway`.
def transcribe_url_setting() -> Any:
    return setting(
        None,
        env=URL_SETTING,
        flag="--transcribe-url",
        help="base URL of an OpenAI-compatible transcription service (POST "
        "/v1/audio/transcriptions; local whisper servers speak it): Discord voice messages "
        "and Slack audio clips become prompts; none: they are refused with a note saying so",
        example="http://127.0.0.1:8000",
    )


def transcribe_model_setting() -> Any:
    return setting(
        DEFAULT_MODEL,
        env="RAWP_GATEWAY_TRANSCRIBE_MODEL",
        flag="--transcribe-model",
        help="the `model` sent with each clip (what the transcription service calls its model)",
    )


def transcribe_key_setting() -> Any:
    return setting(
        None,
        env="RAWP_GATEWAY_TRANSCRIBE_KEY",
        help="API key of the transcription service, sent as a Bearer token and never logged; "
        "none: no Authorization header (a local server); read from the environment only",
    )


def transcribe_timeout_setting() -> Any:
    return setting(
        DEFAULT_TIMEOUT_S,
        env="RAWP_GATEWAY_TRANSCRIBE_TIMEOUT",
        flag="--transcribe-timeout",
        help="seconds one clip may take to transcribe; then the person is told and nothing is sent",
    )


def voice_config(settings: Any) -> VoiceConfig:
    """The transcription service of `GatewayOptions` or `rawp up`'s settings (same fields)."""
    key = settings.transcribe_key
    return VoiceConfig(
        url=settings.transcribe_url,
        model=settings.transcribe_model,
        api_key=key.get_secret_value() if key is not None else None,
        timeout_s=settings.transcribe_timeout,
    )


# The console group of --help lists these; the others come first.
CONSOLE_OPTIONS = ("console_user", "node", "agent")


class GatewayOptions(CommandSettings):
    """`rawp gateway`'s settings (docs/operations-gateway.md has the generated table)."""

    master_url: str = setting(
        "http://127.0.0.1:8700",
        env="RAWP_MASTER_URL",
        flag="--master-url",
        help="base URL of the master's Edge API",
    )
    edge_secret: SecretStr | None = setting(
        None,
        env="RAWP_EDGE_SECRET",
        help="the master's edge service credential (the same value the master has); read "
        "from the environment only",
    )
    platform: Platform = setting(
        (),
        env="RAWP_PLATFORM",
        flag="--platform",
        help="chat platforms, e.g. slack,web; none: every platform whose token is configured "
        "(DISCORD_BOT_TOKEN, SLACK_BOT_TOKEN), else the console",
    )
    web_port: Port = setting(
        DEFAULT_WEB_PORT,
        env="RAWP_WEB_PORT",
        flag="--web-port",
        help="port of the web edge (with --platform …,web; docs/web.md); 0: any free one",
    )
    web_host: str = web_host_setting()
    web_public_url: str | None = web_public_url_setting()
    web_login_for: str | None = setting(
        None,
        env="RAWP_WEB_LOGIN_FOR",
        flag="--web-login-for",
        help="print a one-time web sign-in link for this chat subject when the web edge "
        "starts (valid 10 minutes), e.g. with the web edge alone; chat users get theirs with "
        "/rawp web",
        example="discord:123456789012345678",
    )
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
    redis_url: RedisUrl = setting(
        None,
        env="RAWP_REDIS_URL",
        flag="--redis-url",
        help="Redis shared by several gateway replicas: session leases, cross-replica "
        "signals, Discord shard leases and the platform rate budget (docs/scale-out.md); "
        "none: one gateway process, nothing shared",
        example="redis://127.0.0.1:6379/0",
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
        ("demo",),
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
    transcribe_url: TranscribeUrl = transcribe_url_setting()
    transcribe_model: str = transcribe_model_setting()
    transcribe_key: SecretStr | None = transcribe_key_setting()
    transcribe_timeout: TranscribeTimeout = transcribe_timeout_setting()
    metrics_address: Address = setting(
        None,
        env="RAWP_GATEWAY_METRICS_ADDRESS",
        flag="--metrics-address",
        help="host:port to serve GET /metrics and GET /health on (0.0.0.0:9464 in a container, "
        "with RAWP_METRICS_TOKEN); none: not served",
        example="127.0.0.1:9464",
    )
    metrics_token: SecretStr | None = metrics_token_setting()
    console_user: str = setting(
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
