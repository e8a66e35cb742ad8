"""Path confinement (RAWP §7.2, X-SEC-01): every path from the network is resolved first.

Rules:

1. A path is text; NUL bytes, `~` expansion and percent-encoded separators are refused
   before anything touches the file system (`%2f`, `%5c`, `%00` are attacks, not names).
2. The path is resolved with symlinks followed (`Path.resolve(strict=False)`), so `..` and a
   link pointing outside are judged by where they really lead.
3. The resolved path must lie inside one of the allowed roots and, when a workspace is given,
   inside that workspace (itself resolved). Anything else is `Forbidden` (403).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from rawp.errors import BadRequest, Forbidden

_ENCODED = re.compile(r"%(2f|5c|00|2e)", re.IGNORECASE)


class PathGuard:
    """Resolves network paths and refuses those outside the allowed roots."""

    def __init__(self, allowed_roots: Sequence[Path]) -> None:
        self.roots = tuple(Path(root).resolve() for root in allowed_roots)

    def resolve(
        self, raw: object, *, workspace: Path | None = None, relative_to: Path | None = None
    ) -> Path:
        """The real path `raw` names, or `Forbidden`.

        `relative_to` is where a relative path starts (a session's workspace); without it only
        absolute paths are accepted (`/v1/fs/list` takes an absolute `target_path`, §4.4).
        """
        if not isinstance(raw, str) or not raw:
            raise BadRequest("a path must be a non-empty string", "INVALID_PATH")
        if "\x00" in raw:
            raise Forbidden("a path must not contain NUL bytes", "PATH_FORBIDDEN")
        if raw.startswith("~"):
            raise Forbidden("'~' is not expanded; give the full path", "PATH_FORBIDDEN")
        if _ENCODED.search(raw):
            raise Forbidden("percent-encoded separators are not accepted", "PATH_FORBIDDEN")
        if "\\" in raw:
            raise Forbidden("backslashes are not path separators here", "PATH_FORBIDDEN")
        candidate = Path(raw)
        if not candidate.is_absolute():
            if relative_to is None:
                raise Forbidden("the path must be absolute", "PATH_FORBIDDEN")
            candidate = relative_to / candidate
        try:
            real = Path(os.path.realpath(candidate))
        except (OSError, ValueError):
            raise Forbidden("the path cannot be resolved", "PATH_FORBIDDEN") from None
        if not any(_inside(real, root) for root in self.roots):
            raise Forbidden("the path is outside the allowed roots", "PATH_FORBIDDEN")
        if workspace is not None and not _inside(real, Path(os.path.realpath(workspace))):
            raise Forbidden("the path is outside the session's workspace", "PATH_FORBIDDEN")
        return real

    def workspace(self, raw: object) -> Path:
        """A session's `workspace_path`: confined and an existing directory."""
        real = self.resolve(raw)
        if not real.is_dir():
            raise BadRequest("workspace_path is not a directory", "WORKSPACE_NOT_A_DIRECTORY")
        return real


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents
