"""Which directories a search covers (DPS §16.1.1 `scope`, decided in A-27).

- `workspace`: the session's workspace.
- `project`: the enclosing repository root — the nearest directory at or above the workspace
  holding `.git` — when it lies inside the same allowed root; otherwise the workspace.
- `global`: every allowed root.
Nothing outside the allowed roots is ever searched; a workspace outside every allowed root
searches nothing.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Part:
    """One directory to search: `base` (root-relative, POSIX, `""` = the whole root) of `root`."""

    root: str
    base: str


def normalise_roots(roots: Sequence[Path]) -> list[str]:
    """Resolved, de-duplicated roots; a root inside another is dropped (the outer one holds it)."""
    resolved = sorted({os.path.realpath(os.path.expanduser(str(r))) for r in roots})
    kept: list[str] = []
    for root in resolved:
        if not any(_within(root, outer) for outer in kept):
            kept.append(root)
    return kept


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _relative(path: str, root: str) -> str:
    return "" if path == root else path[len(root.rstrip("/")) + 1 :]


def owning_root(path: str, roots: Sequence[str]) -> str | None:
    return next((root for root in roots if _within(path, root)), None)


def project_root(workspace: str, root: str) -> str:
    """The nearest directory at or above `workspace`, inside `root`, that holds `.git`."""
    current = workspace
    while _within(current, root):
        if os.path.lexists(os.path.join(current, ".git")):
            return current
        if current == root:
            break
        current = os.path.dirname(current)
    return workspace


def resolve_scope(scope: str, workspace: str, roots: Sequence[str]) -> list[Part]:
    """The parts a search covers; empty when the workspace is outside every allowed root.

    `workspace` must already be resolved (realpath)."""
    root = owning_root(workspace, roots)
    if root is None:
        return []
    if scope == "global":
        return [Part(r, "") for r in roots]
    base = project_root(workspace, root) if scope == "project" else workspace
    return [Part(root, _relative(base, root))]
