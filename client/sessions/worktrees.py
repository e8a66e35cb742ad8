"""A git worktree per session (issue 30 §3, docs/worktrees.md).

Rules:

1. A session started with a worktree (`worktree: true` in `session/init`, or `worktree = true`
   on its agent) works in a new worktree on a new branch `rawp/<first 8 characters of the
   session id>`, made from the workspace's `HEAD` with real `git` child processes
   (`git worktree add -b …`), never on the event loop. The worktree is a sibling of the
   repository: `<repository>.worktrees/<short id>`, and must pass the path guard like every
   other path; a workspace that is not inside a git repository is `400 NOT_A_GIT_REPOSITORY`.
2. What was made is recorded in `<state_dir>/worktrees.json` (written through a temporary
   file and `os.replace`) before the agent starts, so after a client restart the worktree
   (on disk) can still be diffed, merged or discarded.
3. `diff` is the branch's changes against the commit it started from, uncommitted and new
   files included (they are marked intent-to-add so `git diff` shows them).
4. `merge` commits what the agent left uncommitted on the branch, then merges the branch into
   the branch the workspace was on, in the workspace itself. A conflict (or any failed merge)
   is `git merge --abort`ed, so nothing is left half-merged, and answered `409
   MERGE_CONFLICT`; the worktree stays. A merged worktree is removed with its branch.
5. `discard` removes the worktree (`--force`) and deletes the branch.
   `diff`, `merge` and `discard` each look the record up and run under one lock: of two at
   once (a double click) the second finds the worktree gone, `404 NO_WORKTREE`, not a git
   failure on a removed directory.
6. A session that resumes (not forks) an earlier one inherits its worktree: the record moves to
   the new session id (`inherit`), so the worktree command acts on it from the resumed thread;
   a resume that fails to start gives it back.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from client.files.paths import PathGuard
from rawp.errors import BadRequest, Conflict, Forbidden, NotFound, RawpError

log = logging.getLogger(__name__)

RECORD_FILE = "worktrees.json"
BRANCH_PREFIX = "rawp/"
DIFF_LIMIT = 1_000_000  # characters of diff answered; the rest is cut and said so
ACTIONS = ("diff", "merge", "discard")


class GitFailed(RawpError):
    status = 500
    default_code = "GIT_FAILED"


@dataclass(frozen=True)
class Worktree:
    """What rule 2 records for one session."""

    session_id: str
    repository: str  # the workspace's repository top level
    path: str  # the worktree
    branch: str  # rawp/<short id>
    base_branch: str  # the branch the workspace was on
    base_commit: str  # HEAD when the worktree was made
    workspace: str  # the agent's workspace inside the worktree


async def git(cwd: Path | str, *args: str) -> tuple[int, str]:
    """One `git` child process; its exit code and its output (stdout and stderr)."""
    process = await asyncio.create_subprocess_exec(
        "git",
        *args,
        cwd=str(cwd),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"},
    )
    out, _ = await process.communicate()
    return process.returncode or 0, out.decode("utf-8", "replace")


async def _must(cwd: Path | str, *args: str) -> str:
    code, out = await git(cwd, *args)
    if code != 0:
        raise GitFailed(f"git {args[0]} failed: {out.strip()[-500:]}")
    return out.strip()


class Worktrees:
    """The worktrees of this client's sessions, kept in the state directory (rule 2)."""

    def __init__(self, state_dir: Path, guard: PathGuard) -> None:
        self.file = Path(state_dir) / RECORD_FILE
        self.guard = guard
        self._lock = asyncio.Lock()  # one git operation on the records at a time
        self.records: dict[str, Worktree] = self._load()

    def _load(self) -> dict[str, Worktree]:
        if not self.file.exists():
            return {}
        try:
            data = json.loads(self.file.read_text())
            return {key: Worktree(**value) for key, value in data.items()}
        except (ValueError, TypeError) as exc:
            log.warning("%s is unreadable (%s); no worktrees are known", self.file, exc)
            return {}

    def _save(self) -> None:
        tmp = self.file.with_name(self.file.name + ".tmp")
        data = {key: asdict(value) for key, value in self.records.items()}
        tmp.write_text(json.dumps(data, indent=1))
        os.replace(tmp, self.file)

    def get(self, session_id: str) -> Worktree:
        record = self.records.get(session_id)
        if record is None:
            raise NotFound("this session has no worktree", "NO_WORKTREE")
        return record

    def inherit(self, from_id: str, to_id: str) -> bool:
        """Rule 6: `from_id`'s worktree becomes `to_id`'s; False when it had none."""
        record = self.records.pop(from_id, None)
        if record is None:
            return False
        self.records[to_id] = replace(record, session_id=to_id)
        self._save()
        log.info("session %s: inherits the worktree %s of %s", to_id, record.path, from_id)
        return True

    async def create(self, session_id: str, workspace: Path) -> Worktree:
        """Rule 1: the worktree the session's agent works in."""
        code, top = await git(workspace, "rev-parse", "--show-toplevel")
        if code != 0:
            raise BadRequest(
                f"the workspace {workspace} is not inside a git repository; "
                "start the session without a worktree or pick a repository",
                "NOT_A_GIT_REPOSITORY",
            )
        short = session_id.replace("-", "")[:8]
        repository, target, inner = await asyncio.to_thread(_place, top.strip(), workspace, short)
        try:
            self.guard.resolve(str(target))  # inside the allowed roots, like every path
        except Forbidden:
            raise Forbidden(
                f"the worktree would be made at {target}, outside the allowed roots; "
                "allow the repository's parent directory",
                "WORKTREE_OUTSIDE_ROOTS",
            ) from None
        base_commit = await _must(repository, "rev-parse", "--verify", "HEAD")
        base_branch = await _must(repository, "rev-parse", "--abbrev-ref", "HEAD")
        branch = BRANCH_PREFIX + short
        async with self._lock:
            await asyncio.to_thread(target.parent.mkdir, parents=True, exist_ok=True)
            await _must(repository, "worktree", "add", "-b", branch, str(target), base_commit)
            record = Worktree(
                session_id=session_id,
                repository=str(repository),
                path=str(target),
                branch=branch,
                base_branch=base_branch,
                base_commit=base_commit,
                workspace=str(target / inner),
            )
            self.records[session_id] = record
            self._save()
        log.info("session %s: worktree %s on branch %s", session_id, target, branch)
        return record

    async def diff(self, session_id: str) -> dict[str, object]:
        """Rule 3."""
        async with self._lock:  # not while a merge or discard removes the worktree
            record = self.get(session_id)
            await _must(record.path, "add", "--all", "--intent-to-add")
            text = await _must(record.path, "diff", "--no-color", record.base_commit)
        cut = len(text) > DIFF_LIMIT
        return {
            "branch": record.branch,
            "base_branch": record.base_branch,
            "diff": text[:DIFF_LIMIT] + ("\n" if text else ""),
            "truncated": cut,
        }

    async def merge(self, session_id: str) -> dict[str, object]:
        """Rule 4."""
        async with self._lock:
            record = self.get(session_id)  # under the lock: a merge just before removed it
            await self._commit_pending(record)
            current = await _must(record.repository, "rev-parse", "--abbrev-ref", "HEAD")
            if current != record.base_branch:
                raise Conflict(
                    f"the workspace is now on {current}, not {record.base_branch}; "
                    "switch it back before merging",
                    "MERGE_REFUSED",
                )
            message = f"Merge {record.branch} (rawp session {session_id})"
            who = await _identity(record.repository)
            merge = ("merge", "--no-ff", "--no-edit", "-m", message, record.branch)
            code, out = await git(record.repository, *who, *merge)
            if code != 0:
                await git(record.repository, "merge", "--abort")
                raise Conflict(
                    f"{record.branch} does not merge cleanly into {record.base_branch}; "
                    f"nothing was merged (git: {_last_lines(out)})",
                    "MERGE_CONFLICT",
                )
            await self._remove(record)
        return {"merged": True, "branch": record.branch, "into": record.base_branch}

    async def discard(self, session_id: str) -> dict[str, object]:
        """Rule 5."""
        async with self._lock:
            record = self.get(session_id)
            await self._remove(record)
        return {"discarded": True, "branch": record.branch}

    async def _commit_pending(self, record: Worktree) -> None:
        await _must(record.path, "add", "--all")
        code, _ = await git(record.path, "diff", "--cached", "--quiet")
        if code != 0:
            who = await _identity(record.path)
            message = f"rawp session {record.session_id}"
            await _must(record.path, *who, "commit", "--no-verify", "-m", message)

    async def _remove(self, record: Worktree) -> None:
        if await asyncio.to_thread(os.path.exists, record.path):
            await _must(record.repository, "worktree", "remove", "--force", record.path)
        else:
            await git(record.repository, "worktree", "prune")
        await _must(record.repository, "branch", "-D", record.branch)
        self.records.pop(record.session_id, None)
        self._save()


def _place(top: str, workspace: Path, short: str) -> tuple[Path, Path, Path]:
    """The repository, the worktree beside it, and the workspace's place inside both."""
    repository = Path(top).resolve()
    target = repository.parent / f"{repository.name}.worktrees" / short
    return repository, target, workspace.resolve().relative_to(repository)


async def _identity(cwd: str) -> tuple[str, ...]:
    """The repository's own committer, or `rawp` where none is configured (a bare machine)."""
    code, _ = await git(cwd, "config", "user.email")
    if code == 0:
        return ()
    return ("-c", "user.name=rawp", "-c", "user.email=rawp@localhost")


def _last_lines(text: str) -> str:
    return " / ".join(text.strip().splitlines()[-3:])[:500]
