"""The client's state directory: its signing key and its pairing credentials.

Both files hold secrets and are written with mode 0600 (created that way, never chmod-ed
after the fact, so there is no moment when another user could read them). Writes go through
a temporary file and `os.replace`, so a crash never leaves half a credentials file.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rawp.tokens import SigningKey

KEY_FILE = "client_key.pem"
CREDENTIALS_FILE = "credentials.json"


@dataclass
class Credentials:
    """What pairing (§3.3) leaves behind, plus the rotating client refresh token."""

    master_url: str | None = None
    node_id: str | None = None
    # The token this client presents to the master, and how to renew it (§3.4).
    access_token: str | None = None
    refresh_token: str | None = None
    server_credentials: dict[str, Any] | None = None
    # SHA-256 of the one refresh token the master may use on us (rotated on every use).
    client_refresh_fingerprint: str | None = None

    @property
    def paired(self) -> bool:
        return bool(self.master_url and self.access_token and self.server_credentials)


@dataclass
class StateDir:
    path: Path
    credentials: Credentials = field(default_factory=Credentials)

    @classmethod
    def open(cls, path: Path) -> StateDir:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        state = cls(path)
        file = path / CREDENTIALS_FILE
        if file.exists():
            data = json.loads(file.read_text())
            known = Credentials.__dataclass_fields__
            state.credentials = Credentials(**{k: v for k, v in data.items() if k in known})
        return state

    def signing_key(self) -> SigningKey:
        """The client's ES256 key; generated on first use (A-06)."""
        file = self.path / KEY_FILE
        if file.exists():
            return SigningKey.from_pem(file.read_bytes())
        key = SigningKey.generate()
        write_secret(file, key.to_pem())
        return key

    def save(self) -> None:
        write_secret(self.path / CREDENTIALS_FILE, json.dumps(asdict(self.credentials)).encode())


def write_secret(file: Path, data: bytes) -> None:
    tmp = file.with_name(file.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    os.replace(tmp, file)
