"""Settings (issue 17 §1): one line for a bad value, --help in any environment, `.env` from the
working directory, flags over the environment over `.env` — run as real `rawp` processes."""

import os
import subprocess
from pathlib import Path
from typing import Annotated

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import SecretStr, StringConstraints

from rawp_app import settings_docs
from rawp_app.cli import COMMANDS
from runtime.settings import CommandSettings, SettingError, plain, setting
from tests import prefork

# Variables that might be set where the tests run and would change what a command does.
CLEAN = {k: v for k, v in os.environ.items() if not k.startswith(("RAWP_", "DISCORD_", "SLACK_"))}


def rawp(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    # `python -m rawp_app.cli ARGS` in `cwd`, stdin closed, the imports done (tests/prefork.py)
    return prefork.run(args, cwd=cwd, env={**CLEAN, **(env or {})})


# command line, bad variable, value, the line it must print
BAD_VALUES = {
    "master": (
        ["master"],
        "RAWP_MASTER_PORT",
        "abc",
        "rawp master: RAWP_MASTER_PORT: expected a port number 0–65535, 0 for any free one, "
        "got 'abc'",
    ),
    "client": (
        ["client", "--dev"],
        "RAWP_CLIENT_MAX_FRAME_SIZE",
        "12",
        "rawp client: RAWP_CLIENT_MAX_FRAME_SIZE: expected a whole number at least 1024, got '12'",
    ),
    "client pair": (
        ["client", "pair", "http://127.0.0.1:9/v1/auth/pair?token=t"],
        "RAWP_DEV",
        "maybe",
        "rawp client: RAWP_DEV: expected 1 or 0 (also true/false, yes/no), got 'maybe'",
    ),
    "gateway": (
        ["gateway"],
        "RAWP_GATEWAY_APPROVAL_TIMEOUT",
        "soon",
        "rawp gateway: RAWP_GATEWAY_APPROVAL_TIMEOUT: expected a number of seconds above 0, "
        "at most 604800, got 'soon'",
    ),
    "gateway metrics address": (
        ["gateway"],
        "RAWP_GATEWAY_METRICS_ADDRESS",
        "nowhere",
        "rawp gateway: RAWP_GATEWAY_METRICS_ADDRESS: expected host:port, e.g. 127.0.0.1:9464, "
        "not 'nowhere'",
    ),
    "log format": (
        ["master"],
        "RAWP_LOG_FORMAT",
        "xml",
        "rawp master: RAWP_LOG_FORMAT: expected one of text, json, got 'xml'",
    ),
    # Issue 34 §4: another scheme is a setting error on every tier, not redis-py's traceback.
    "master redis": (
        ["master"],
        "RAWP_REDIS_URL",
        "http://redis:6379/0",
        "rawp master: RAWP_REDIS_URL: expected a redis://, rediss:// or unix:// URL (kept secret)",
    ),
    "gateway redis": (
        ["gateway"],
        "RAWP_REDIS_URL",
        "redis//redis:6379/0",
        "rawp gateway: RAWP_REDIS_URL: expected a redis://, rediss:// or unix:// URL (kept secret)",
    ),
    "up": (
        ["up"],
        "RAWP_UP_MASTER_PORT",
        "-1",
        "rawp up: RAWP_UP_MASTER_PORT: expected a port number 1–65535, 0 for last run's or a "
        "free one, got '-1'",
    ),
}


@pytest.mark.parametrize("command", list(BAD_VALUES))
def test_a_bad_value_is_one_line_naming_the_variable(command, tmp_path):
    args, name, value, line = BAD_VALUES[command]
    result = rawp(*args, cwd=tmp_path, env={name: value, "RAWP_EDGE_SECRET": "s" * 40})
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert result.stderr.splitlines() == [line]
    assert not (tmp_path / ".rawp").exists()  # refused before anything was created


def test_a_bad_flag_value_names_the_flag(tmp_path):
    result = rawp("master", "--port", "99999", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "rawp master: --port: expected a port number 0–65535, 0 for any free one, got '99999'"
    ]


def test_a_bad_platform_setting_is_one_line_too(tmp_path):
    """The Slack adapter's settings (read when the gateway serves Slack) fail the same way."""
    env = {"RAWP_EDGE_SECRET": "s" * 40, "SLACK_BOT_TOKEN": "xoxb-1", "SLACK_MODE": "pigeon"}
    result = rawp("gateway", "--platform", "slack", cwd=tmp_path, env=env)
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines()[-1] == (
        "rawp gateway: SLACK_MODE: expected one of socket, http, got 'pigeon'"
    )
    assert "Traceback" not in result.stderr and "xoxb-1" not in result.stderr


def every_variable_set_to(value: str) -> dict[str, str]:
    return {doc.env: value for tier in settings_docs.TIERS for doc in tier.settings()}


@pytest.mark.parametrize("command", [*COMMANDS, "client pair", "master audit"])
def test_help_works_whatever_the_environment_holds(command, tmp_path):
    """Issue 17: `RAWP_MASTER_PORT=abc rawp client --help` printed a ValueError traceback."""
    result = rawp(*command.split(), "--help", cwd=tmp_path, env=every_variable_set_to("abc"))
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert f"usage: rawp {command}" in result.stdout


def pairing_url(tmp_path: Path, *flags: str, env: dict[str, str] | None = None, cwd=None) -> str:
    """`rawp master pairing-url`: prints a URL built from RAWP_MASTER_PUBLIC_URL."""
    state = str(tmp_path / "state")
    result = rawp(
        "master", "--state-dir", state, *flags, "pairing-url", "--user", "local:me",
        cwd=cwd or tmp_path, env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_dotenv_in_the_working_directory_is_read_and_loses_to_env_and_flags(tmp_path):
    (tmp_path / ".env").write_text("RAWP_MASTER_PUBLIC_URL=https://from-dotenv.example\n")
    assert pairing_url(tmp_path).startswith("https://from-dotenv.example/v1/auth/pair?token=")
    env = {"RAWP_MASTER_PUBLIC_URL": "https://from-env.example"}
    assert pairing_url(tmp_path, env=env).startswith("https://from-env.example/")
    flag = ("--public-url", "https://from-flag.example")
    assert pairing_url(tmp_path, *flag, env=env).startswith("https://from-flag.example/")


def test_dotenv_is_not_searched_for_above_the_working_directory(tmp_path):
    (tmp_path / ".env").write_text("RAWP_MASTER_PUBLIC_URL=https://from-parent.example\n")
    below = tmp_path / "below"
    below.mkdir()
    assert pairing_url(tmp_path, cwd=below).startswith("http://127.0.0.1:8700/")


def test_an_empty_variable_counts_as_unset(tmp_path):
    """`.env.example` copied as is holds empty lines: they must change nothing."""
    env = {"RAWP_MASTER_PUBLIC_URL": "", "RAWP_MASTER_PORT": ""}
    assert pairing_url(tmp_path, env=env).startswith("http://127.0.0.1:8700/")


# --- in process: the models themselves ------------------------------------------------------


class Sample(CommandSettings):
    token: Annotated[SecretStr, StringConstraints(min_length=10)] = setting(
        ..., env="SAMPLE_TOKEN", help="a token"
    )
    count: int = setting(3, env="SAMPLE_COUNT", flag="--count", help="how many")


def test_a_secret_is_never_repeated_in_an_error():
    with pytest.raises(SettingError) as raised:
        Sample.from_environment(environ={"SAMPLE_TOKEN": "hunter2"})
    assert str(raised.value) == "SAMPLE_TOKEN: expected a secret, never shown"
    assert "hunter2" not in str(raised.value)
    with pytest.raises(SettingError, match=r"^SAMPLE_TOKEN is not set"):
        Sample.from_environment(environ={})
    sample = Sample.from_environment(environ={"SAMPLE_TOKEN": "a-long-token"})
    assert "a-long-token" not in repr(sample) and "a-long-token" not in str(sample)


def test_flags_win_over_the_environment_in_the_model():
    environ = {"SAMPLE_TOKEN": "a-long-token", "SAMPLE_COUNT": "5"}
    assert Sample.from_environment(environ=environ).count == 5
    assert Sample.from_environment({"count": "7"}, environ=environ).count == 7
    with pytest.raises(SettingError, match=r"^--count: expected a whole number, got 'x'$"):
        Sample.from_environment({"count": "x"}, environ=environ)


def test_building_a_model_directly_reads_no_environment(monkeypatch):
    from master.settings import MasterSettings

    monkeypatch.setenv("RAWP_MASTER_PORT", "9999")
    assert MasterSettings().port == 8700
    assert MasterSettings.from_environment().port == 9999


def test_master_settings_are_read_into_the_one_model(tmp_path):
    from master.settings import MasterSettings

    environ = {
        "RAWP_MASTER_HOST": "0.0.0.0",
        "RAWP_DATABASE_URL": "postgresql+asyncpg://rawp:pw@db/rawp",
        "RAWP_EDGE_SECRET": "e" * 40,
        "RAWP_EDGE_DENY_TOOLS": "Bash, Edit,",
        "RAWP_MASTER_NODE_RATE_LIMIT": "5/min",
        "RAWP_LEASE_SECONDS": "7.5",
        "RAWP_EDGE_USER_RATE_LIMITS": "bench:scale=2000/s, slack:T=1:U2=5/min",
    }
    settings = MasterSettings.from_environment(environ=environ)
    assert "pw@db" not in repr(settings) and "e" * 40 not in repr(settings)
    assert settings.host == "0.0.0.0" and settings.database_address.endswith("pw@db/rawp")
    assert plain(settings.edge.secret) == "e" * 40
    assert settings.edge.deny_tools == ("Bash", "Edit")
    assert settings.node_budget.burst == 5 and settings.edge.lease_seconds == 7.5
    assert settings.edge.budget_of("bench:scale").per_second == 2000
    assert settings.edge.budget_of("slack:T=1:U2").burst == 5  # a subject may hold "="
    assert settings.edge.budget_of("discord:1") == settings.edge.user_budget
    with pytest.raises(SettingError, match=r"RAWP_EDGE_USER_RATE_LIMITS: .*'bench:scale'"):
        MasterSettings.from_environment(environ={"RAWP_EDGE_USER_RATE_LIMITS": "bench:scale"})
    with pytest.raises(SettingError) as raised:
        MasterSettings.from_environment(environ={"RAWP_MASTER_NODE_RATE_LIMIT": "5/day"})
    assert str(raised.value) == (
        "RAWP_MASTER_NODE_RATE_LIMIT: a rate looks like '20/s', '10/min' or '600/h', not '5/day'"
    )
    with pytest.raises(SettingError, match="--tls-cert and --tls-key go together"):
        MasterSettings.from_environment(environ={"RAWP_MASTER_TLS_CERT": "c.pem"})


def test_client_settings_are_read_into_the_one_model(tmp_path):
    from client.settings import ClientSettings

    roots = os.pathsep.join([str(tmp_path / "a"), str(tmp_path / "b")])
    environ = {"RAWP_ALLOWED_ROOTS": roots, "RAWP_CLIENT_BUFFER_POLICY": "DROP"}
    settings = ClientSettings.from_environment(environ=environ)
    assert settings.roots == [tmp_path / "a", tmp_path / "b"]
    assert settings.limits.buffer_overflow_policy == "DROP"
    flags = {"allowed_roots": [str(tmp_path)]}  # --allow-root, repeated
    assert ClientSettings.from_environment(flags, environ).roots == [tmp_path]
    assert ClientSettings().roots == [Path.cwd()]  # none: the current directory
    with pytest.raises(SettingError, match=r"RAWP_CLIENT_MAX_BUFFER_SIZE .* must be at least"):
        ClientSettings.from_environment(environ={"RAWP_CLIENT_MAX_BUFFER_SIZE": "2048"})


def test_metrics_budget_footer_and_dm_settings_reach_their_tiers(tmp_path):
    """The settings metrics, budgets, mention starts and files added (issue 16) are model fields
    like the others: the metrics token is a secret, environment only, and reaches each tier."""
    from adapters.discord.settings import DiscordSettings
    from client.settings import ClientSettings
    from gateway.settings import GatewaySettings, parse_address
    from master.settings import MasterSettings

    token = "m" * 40
    budgets = tmp_path / "budgets.toml"
    budgets.write_text("[default]\ncost_per_day = 5\n")
    master = MasterSettings.from_environment(
        environ={"RAWP_METRICS_TOKEN": token, "RAWP_BUDGETS_FILE": str(budgets)}
    )
    assert token not in repr(master) and master.edge.budgets_file == budgets
    assert master.edge.budgets.default.cost_per_day == 5  # read as the settings are made
    assert plain(master.metrics_token) == token
    client = ClientSettings.from_environment(environ={"RAWP_METRICS_TOKEN": token})
    assert plain(client.metrics_token) == token
    gateway = GatewaySettings.from_environment(
        {"metrics_address": "[::1]:9464"}, {"RAWP_USAGE_FOOTER": "1", "RAWP_METRICS_TOKEN": token}
    )
    assert gateway.usage_footer and parse_address(gateway.metrics_address) == ("::1", 9464)
    assert gateway.metrics_token.get_secret_value() == token
    assert not GatewaySettings().usage_footer and GatewaySettings().metrics_address is None
    discord = DiscordSettings.from_env({"DISCORD_BOT_TOKEN": "x", "DISCORD_ALLOW_DMS": "no"})
    assert discord.allow_dms is False and discord.max_upload_bytes is None
    for model in (MasterSettings, ClientSettings, GatewaySettings):  # never a flag
        assert model.model_fields["metrics_token"].json_schema_extra["flag"] is None


# Issue 34 §3: every character URLs treat specially, and what `openssl rand -base64` gives.
SPECIAL = "@%/:#?+="


@given(
    st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1).map(
        lambda text: text + SPECIAL
    )
)
def test_a_database_password_of_any_characters_reaches_the_url_intact(password):
    from sqlalchemy.engine import make_url

    from master.settings import MasterSettings

    environ = {
        "RAWP_DATABASE_URL": "postgresql+asyncpg://rawp@postgres:5432/rawp",
        "RAWP_DATABASE_PASSWORD": password,
    }
    settings = MasterSettings.from_environment(environ=environ)
    url = make_url(settings.database_address)
    assert (url.username, url.password) == ("rawp", password)
    assert (url.host, url.port, url.database) == ("postgres", 5432, "rawp")


def test_a_password_set_by_hand_is_escaped_in_the_url_or_given_apart():
    from sqlalchemy.engine import make_url

    from master.settings import MasterSettings

    by_hand = "postgresql+asyncpg://rawp:a%40b%25c%2Fd%3Ae%23f%3Fg+h%3Di@db:5432/rawp"
    settings = MasterSettings.from_environment(environ={"RAWP_DATABASE_URL": by_hand})
    assert make_url(settings.database_address).password == "a@b%c/d:e#f?g+h=i"
    apart = {"RAWP_DATABASE_URL": by_hand, "RAWP_DATABASE_PASSWORD": "x@y"}
    settings = MasterSettings.from_environment(environ=apart)
    assert make_url(settings.database_address).password == "x@y"  # the separate one wins
    with pytest.raises(SettingError, match="RAWP_DATABASE_PASSWORD needs RAWP_DATABASE_URL"):
        MasterSettings.from_environment(environ={"RAWP_DATABASE_PASSWORD": "x"})
