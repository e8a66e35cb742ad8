"""The settings several commands read, each declared once (runtime.settings rule 6).

A model takes one by calling its function, e.g. `secret: SecretStr | None =
edge_secret_setting("…")`: the variable, its flag and its default are written here only;
`help` says what the setting is to that command (its --help and docs table). The master and
the gateway both read RAWP_EDGE_SECRET and RAWP_REDIS_URL; the client, `rawp up` and doctor
RAWP_AGENTS_FILE; the gateway and doctor RAWP_MASTER_URL; every server RAWP_METRICS_TOKEN.
tests/test_settings_homes.py checks that no variable is declared twice.
"""

from __future__ import annotations

from typing import Any

from runtime.settings import setting


def dev_setting(allows: str) -> Any:
    """RAWP_DEV / --dev, the same switch in every tier; `allows` says what it permits there."""
    return setting(
        False,
        env="RAWP_DEV",
        flag="--dev",
        help=f"development mode: allow {allows} (never in production)",
    )


def metrics_token_setting() -> Any:
    """RAWP_METRICS_TOKEN, the same secret wherever GET /metrics is served
    (runtime.scrape_access)."""
    return setting(
        None,
        env="RAWP_METRICS_TOKEN",
        help="bearer token GET /metrics requires (Authorization: Bearer …); none: loopback "
        "peers only. Read from the environment only",
    )


def edge_secret_setting(help: str) -> Any:
    """RAWP_EDGE_SECRET: the master's edge service credential, which the gateway (and doctor)
    present; a secret, so never a flag. `help` says what it is to this command."""
    return setting(None, env="RAWP_EDGE_SECRET", help=help)


def redis_url_setting(help: str) -> Any:
    """RAWP_REDIS_URL: the Redis the master's or the gateway's replicas share (RedisUrl)."""
    return setting(
        None,
        env="RAWP_REDIS_URL",
        flag="--redis-url",
        help=help,
        example="redis://127.0.0.1:6379/0",
    )


def database_url_setting(help: str, example: str | None = None) -> Any:
    """RAWP_DATABASE_URL: the master's database (SQLAlchemy URL, kept secret)."""
    return setting(None, env="RAWP_DATABASE_URL", flag="--database-url", help=help, example=example)


def agents_file_setting(help: str) -> Any:
    """RAWP_AGENTS_FILE: the TOML file naming the agents a client may run (docs/agents.md),
    read by `rawp client`, `rawp up` and doctor."""
    return setting(None, env="RAWP_AGENTS_FILE", flag="--agents-file", help=help)


def master_url_setting(help: str) -> Any:
    """RAWP_MASTER_URL: where the gateway (and doctor) reach the master's Edge API."""
    return setting("http://127.0.0.1:8700", env="RAWP_MASTER_URL", flag="--master-url", help=help)
