"""`rawp doctor`'s settings: what it checks a deployment with.

Each variable is the one the tier it checks reads, declared once (runtime.settings): the master
URL the gateway uses, the edge secret, the master's database and Redis, the client's agents file.
Only the master URL and the agents file are flags, as before; the rest come from the
environment (or, with `--up`, from that run's up.json). Doctor reports a value it cannot use as
a finding, so its URLs are plain secrets here, not the tiers' checked types.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import SecretStr

from runtime.settings import CommandSettings
from runtime.shared_settings import (
    agents_file_setting,
    database_url_setting,
    edge_secret_setting,
    master_url_setting,
    redis_url_setting,
)


class DoctorSettings(CommandSettings):
    """`rawp doctor`'s settings (the variables are documented with the tiers that use them)."""

    master_url: str = master_url_setting("base URL the gateway reaches the master at")
    agents_file: Path | None = agents_file_setting(
        "the client's agents file; none: the demo agent and the known agent CLIs found on PATH"
    )
    edge_secret: SecretStr | None = edge_secret_setting(
        "the gateway's edge service credential, checked against the master"
    )
    database_url: SecretStr | None = database_url_setting(
        "the master's database: a connection and its migrations are checked; none: not checked"
    )
    redis_url: SecretStr | None = redis_url_setting("the replicas' Redis; none: not checked")
