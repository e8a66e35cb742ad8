"""The master's signing key (§3.3 `server_credentials`): generated once, then reused.

The private key lives in `<state_dir>/master-signing-key.pem`, created with mode 0600 and never
logged. Replicas of one master share the file (docs/operations-master.md).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from rawp.tokens import SigningKey

KEY_FILE = "master-signing-key.pem"

log = logging.getLogger("rawp.master.keys")


def load_or_create_signing_key(state_dir: Path) -> SigningKey:
    path = state_dir / KEY_FILE
    if path.exists():
        return SigningKey.from_pem(path.read_bytes())
    state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    key = SigningKey.generate()
    try:
        # O_EXCL: if another process (a `pairing-url` run) created it meanwhile, use theirs.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return SigningKey.from_pem(path.read_bytes())
    with os.fdopen(fd, "wb") as handle:
        handle.write(key.to_pem())
    log.info("generated a new signing key (kid %s) in %s", key.kid, path)
    return key
