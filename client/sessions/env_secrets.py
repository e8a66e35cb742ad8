"""The workspace's `.env` values, as fingerprints for the edges (issue 15 §3).

The gateway redacts text bound for a chat, but only the client can read the workspace's
`.env`. It sends no value: `session.capabilities` carries `secret_fingerprints`, keyed hashes
of every value (rawp.fingerprints) under a salt the session draws once. The agent itself
reads the files unchanged.

Read: `.env` and `.env.*` at the workspace's root, except examples (`.env.example`,
`.env.sample`, `.env.template`, `.env.dist`), which hold placeholders. A file that cannot be
read or parsed contributes nothing (and is logged): fingerprints are a defence, not a reason
to refuse a session.
"""

from __future__ import annotations

import logging
from pathlib import Path

from dotenv import dotenv_values

from rawp.events import SecretFingerprints
from rawp.fingerprints import fingerprints

log = logging.getLogger(__name__)

EXAMPLES = {".env.example", ".env.sample", ".env.template", ".env.dist"}


def env_files(workspace: Path) -> list[Path]:
    try:
        found = sorted(workspace.glob(".env*"))
    except OSError:
        return []
    return [p for p in found if p.name not in EXAMPLES and (p.name == ".env" or p.name[4] == ".")]


def env_values(workspace: Path) -> list[str]:
    values: list[str] = []
    for path in env_files(workspace):
        try:
            if path.is_file():
                values += [v for v in dotenv_values(path).values() if v]
        except (OSError, UnicodeDecodeError, ValueError):
            log.warning("cannot read %s for its fingerprints", path, exc_info=True)
    return values


def secret_fingerprints(workspace: Path, salt: str) -> SecretFingerprints | None:
    """The fingerprints of the workspace's `.env` values now, None when it has none."""
    lengths, hashes = fingerprints(env_values(workspace), salt)
    if not hashes:
        return None
    return SecretFingerprints(salt=salt, lengths=lengths, hashes=hashes)
