"""One walk of a directory tree into file entries (os.scandir; runs in a worker thread).

What is indexed: regular files, and symlinks to regular files whose target lies inside the
root. Never indexed: `.git`, anything ignored (ignore.py), sockets and other special files,
symlinks that leave the root, names that are not valid UTF-8 (nor anything below them).
Symlinked directories are not descended even when they point inside the root: what they show
is already indexed under its real path, and following them invites cycles.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable
from itertools import repeat
from typing import NamedTuple

from client.files.search.ignore import IgnoreRules
from client.files.search.table import ROOT, PathTable

SKIPPED_DIRS = frozenset({".git"})


class Stamp(NamedTuple):
    """A file's size and mtime, as the search answers them: read when the answer is made,
    never kept per file (table.py)."""

    size: int
    mtime_ns: int


class Cancelled(Exception):
    """The search that asked for this work was cancelled; its partial result is dropped."""


def inside(root: str, real_path: str) -> bool:
    return real_path == root or real_path.startswith(root.rstrip("/") + "/")


def _link_target(root: str, path: str) -> os.stat_result | None:
    """The stat of a symlink's target when it is a regular file inside the root."""
    real = os.path.realpath(path)
    if not inside(root, real):
        return None
    try:
        info = os.stat(real)
    except OSError:
        return None
    return info if stat.S_ISREG(info.st_mode) else None


def _utf8(name: str) -> bool:
    """Whether a name from the OS is real text (undecodable bytes arrive as lone surrogates)."""
    if name.isascii():
        return True
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def stat_entry(root: str, rel: str) -> Stamp | str | None:
    """What `rel` is now: a file's `Stamp`, `"dir"` for a real directory, or
    None (gone, special, a symlink that leaves the root, or a name that is not UTF-8)."""
    if not _utf8(rel):
        return None
    path = os.path.join(root, rel)
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISDIR(info.st_mode):
        return "dir"
    if stat.S_ISLNK(info.st_mode):
        target = _link_target(root, path)
        return Stamp(target.st_size, target.st_mtime_ns) if target else None
    if stat.S_ISREG(info.st_mode):
        return Stamp(info.st_size, info.st_mtime_ns)
    return None


def _list_dir(
    root: str, dir_rel: str, ruled: bool, rules: IgnoreRules
) -> tuple[list[str], list[str], bool] | None:
    """One directory: the names of its indexable files, of the subdirectories to descend, and
    whether `.gitignore` rules apply below it; None when it cannot be read.

    This runs once per directory and its loop once per entry (a million times in a large
    monorepo), so it does the least it can: no `stat` (the index keeps no size or mtime:
    a search stats the ≤ 50 files it answers), ASCII names skip the UTF-8 check, and the
    `.gitignore` rules are asked only below a directory that has some (`ruled`)."""
    try:
        with os.scandir(root + "/" + dir_rel if dir_rel else root) as listing:
            children = list(listing)
    except OSError:
        return None  # unreadable or vanished since we saw it: nothing to index there
    try:  # comprehensions: the per-entry work stays in C (d_type answers is_dir/is_file)
        files = [child.name for child in children if child.is_file(follow_symlinks=False)]
        subdirs = [child.name for child in children if child.is_dir(follow_symlinks=False)]
    except OSError:  # the file system has no d_type and an entry vanished: one by one
        files, subdirs = _sort_entries(children)
    if len(files) + len(subdirs) < len(children):  # symlinks and special files: rare
        files += _linked_files(root, children)
    # Only open a .gitignore that is there: 15,000 failed opens cost a quarter of a walk.
    if not dir_rel or ".gitignore" in files:
        rules.load_dir(dir_rel)
        ruled = ruled or rules.has(dir_rel)
    else:
        rules.drop_dir(dir_rel)
    if not "".join(files).isascii() or not "".join(subdirs).isascii():
        files = [name for name in files if _utf8(name)]  # no JSON string can name the rest
        subdirs = [name for name in subdirs if _utf8(name)]
    if ".git" in subdirs or ".git" in files:  # a repository, or a worktree's link to one
        subdirs = [name for name in subdirs if name not in SKIPPED_DIRS]
        files = [name for name in files if name not in SKIPPED_DIRS]
    if ruled:
        prefix = dir_rel + "/" if dir_rel else ""
        decide = rules.decide
        subdirs = [name for name in subdirs if not decide(prefix + name, True)]
        files = [name for name in files if not decide(prefix + name, False)]
    return files, subdirs, ruled


def _sort_entries(children: list[os.DirEntry]) -> tuple[list[str], list[str]]:
    files: list[str] = []
    subdirs: list[str] = []
    for child in children:
        try:
            if child.is_file(follow_symlinks=False):
                files.append(child.name)
            elif child.is_dir(follow_symlinks=False):
                subdirs.append(child.name)
        except OSError:
            continue
    return files, subdirs


def _linked_files(root: str, children: list[os.DirEntry]) -> list[str]:
    """The symlinks among `children` that end at a regular file inside the root."""
    found = []
    for child in children:
        try:
            if child.is_symlink() and _link_target(root, child.path) is not None:
                found.append(child.name)
        except OSError:
            continue
    return found


Pending = list[tuple[str, int, bool]]  # directories still to list: (path, table id, ruled)


def build(root: str, rules: IgnoreRules, cancelled: Callable[[], bool] | None = None) -> PathTable:
    """The first walk of a root, straight into a `PathTable` (each directory's files one
    block, its parent's id carried down the walk: no path string is kept)."""
    table = PathTable()
    extend(table, root, rules, [("", ROOT, False)], cancelled)
    return table


def extend(
    table: PathTable,
    root: str,
    rules: IgnoreRules,
    pending: Pending,
    cancelled: Callable[[], bool] | None = None,
) -> None:
    """Walk the directories in `pending` (already in `table`, not listed yet) and all below
    them into `table`, depth first."""
    while pending:
        if cancelled is not None and cancelled():
            raise Cancelled
        pending.extend(list_into(table, root, rules, *pending.pop()))


def list_into(
    table: PathTable, root: str, rules: IgnoreRules, dir_rel: str, dir_id: int, ruled: bool
) -> Iterable[tuple[str, int, bool]]:
    """One directory's files into `table`, its subdirectories added; those are returned, to
    be listed in turn (nothing when it cannot be read)."""
    listed = _list_dir(root, dir_rel, ruled, rules)
    if listed is None:
        return ()
    files, subdirs, ruled = listed
    table.add_files(dir_id, files)
    prefix = dir_rel + "/" if dir_rel else ""
    first = table.add_dirs(dir_id, subdirs)
    return zip(map(prefix.__add__, subdirs), range(first, first + len(subdirs)), repeat(ruled))


def walk(
    root: str,
    rules: IgnoreRules,
    *,
    start: str = "",
    cancelled: Callable[[], bool] | None = None,
) -> dict[str, list[str]]:
    """Every directory at or below `start` (a root-relative directory, `""` = the root) →
    the names of its indexable files (a re-walk compares this with the table)."""
    found: dict[str, list[str]] = {}
    pending = [(start, rules.any_above(start))]
    while pending:
        if cancelled is not None and cancelled():
            raise Cancelled
        dir_rel, ruled = pending.pop()
        listed = _list_dir(root, dir_rel, ruled, rules)
        if listed is None:
            continue
        files, subdirs, ruled = listed
        found[dir_rel] = files
        prefix = dir_rel + "/" if dir_rel else ""
        pending.extend((prefix + name, ruled) for name in subdirs)
    return found
