"""Conversations the agent keeps itself that RAWP did not start: terminal sessions (issue 30 §2).

Rules (docs/agents.md "Resume"):

1. Claude Code writes each conversation to `<config dir>/projects/<cwd>/<session id>.jsonl`,
   where `<config dir>` is `CLAUDE_CONFIG_DIR`, else `$HOME/.claude`, in the environment the
   client gives that agent (its `env` over the client's own), and `<cwd>` is the directory it
   ran in with every character but `[A-Za-z0-9]` made `-` (the CLI's own encoding). Each line
   is one JSON record; `user`/`assistant` records carry `cwd`, `sessionId` and `timestamp`.
2. Listed are the transcripts whose recorded `cwd` is an existing directory inside the
   client's allowed roots (the path guard): nothing from outside the configured workspaces,
   and a folder whose encoded name does not start like a root's is not even opened. Listed
   too only conversations RAWP did not start: an id recorded in `agent-sessions.json`
   (client.sessions.resumes) is RAWP's, resumed with `/rawp resume` in its thread instead.
3. A title is the conversation's own (`custom-title`, then `ai-title`, then `summary`
   records), else its first prompt that is not a CLI meta message; one line, cut to
   `TITLE_MAX` characters. At most `LIMIT` conversations, the most recently written first;
   only the first `READ_LIMIT` bytes of a transcript are read.
4. `find` is the only way an id reaches `--resume`: it answers a conversation exactly when the
   listing for that agent would include it, else `404 RESUME_NOT_FOUND`.
5. Reading files happens in a worker thread, never on the event loop.
6. An ACP agent is asked `session/list` where it advertises it (client.sessions.acp_listing);
   each `SessionInfo` passes the same checks (its `cwd` inside the roots, not RAWP's own id, an
   id that fits `CONVERSATION_ID`); its `title` (else "(untitled)") and `updatedAt` are shown.
   Other kinds list nothing. An agent's answer is kept `ACP_FRESH_S` seconds, so autocomplete
   (a request per keystroke) does not start an agent process per keystroke.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from client.agents.base import AgentSpec
from client.files.paths import PathGuard
from client.sessions.acp_listing import acp_sessions
from client.sessions.resumes import AgentSessions
from rawp.errors import NotFound, RawpError
from rawp.rest import CONVERSATION_ID, TITLE_MAX, AgentConversation

LIMIT = 25
READ_LIMIT = 1_000_000  # bytes of one transcript read for its title and directory
SCAN_LIMIT = 500  # transcripts looked at, newest first
ACP_FRESH_S = 10.0
_NOT_ALNUM = re.compile(r"[^A-Za-z0-9]")
_ID = re.compile(CONVERSATION_ID)
TITLE_RECORDS = (("custom-title", "customTitle"), ("ai-title", "aiTitle"), ("summary", "summary"))


def encode(path: str) -> str:
    """Rule 1: Claude Code's folder name for a directory."""
    return _NOT_ALNUM.sub("-", path)


def projects_dir(spec: AgentSpec) -> Path | None:
    """Rule 1: where this agent's Claude Code keeps its transcripts, or None (another kind)."""
    if spec.kind != "claude-code":
        return None
    env = {**os.environ, **getattr(spec.settings, "env", {})}
    config = env.get("CLAUDE_CONFIG_DIR") or (
        str(Path(env["HOME"]) / ".claude") if env.get("HOME") else None
    )
    return Path(config) / "projects" if config else None


class TerminalConversations:
    """Rules 1–5 over the client's agents, path guard and RAWP's own conversation ids."""

    def __init__(self, guard: PathGuard, resumes: AgentSessions | None) -> None:
        self.guard = guard
        self.resumes = resumes
        self._acp_seen: dict[str, tuple[float, list]] = {}  # agent → (when, its sessions)

    def _rawp_ids(self) -> set[str]:
        records = self.resumes.records.values() if self.resumes is not None else ()
        return {r.agent_session_id for r in records}

    async def list(self, specs: Iterable[AgentSpec]) -> list[AgentConversation]:
        found: list[AgentConversation] = []
        for spec in specs:
            found += await self._of(spec, None)
        found.sort(key=lambda c: c.updated_at, reverse=True)
        return found[:LIMIT]

    async def find(self, spec: AgentSpec, conversation_id: str) -> AgentConversation:
        """Rule 4."""
        if _ID.match(conversation_id or ""):
            hits = await self._of(spec, conversation_id)
            if hits:
                return hits[0]
        raise NotFound(
            f"no conversation {conversation_id!r} of agent {spec.name!r} in the allowed "
            "workspaces to pick up",
            "RESUME_NOT_FOUND",
        )

    async def _of(self, spec: AgentSpec, only: str | None) -> list[AgentConversation]:
        if spec.kind == "acp":
            return await self._acp(spec, only)  # rule 6
        return await asyncio.to_thread(self._scan, spec, only)  # rule 5

    async def _acp(self, spec: AgentSpec, only: str | None) -> list[AgentConversation]:
        rawp, listed = self._rawp_ids(), []
        for info in await self._acp_sessions(spec):
            conversation_id, cwd = info.get("sessionId"), info.get("cwd")
            if not isinstance(conversation_id, str) or not _ID.match(conversation_id):
                continue
            if conversation_id in rawp or only not in (None, conversation_id):
                continue
            try:
                workspace = await asyncio.to_thread(self.guard.workspace, cwd)  # rule 2
            except RawpError:
                continue
            updated = info.get("updatedAt")
            listed.append(
                AgentConversation(
                    agent_name=spec.name,
                    conversation_id=conversation_id,
                    workspace_path=str(workspace),
                    title=_one_line(str(info.get("title") or "")) or "(untitled)",
                    updated_at=updated if isinstance(updated, str) else "",
                )
            )
        return listed[:LIMIT]

    async def _acp_sessions(self, spec: AgentSpec) -> list:
        """Rule 6: the agent's `session/list`, asked at most once per `ACP_FRESH_S`."""
        now = time.monotonic()
        seen = self._acp_seen.get(spec.name)
        if seen is None or now - seen[0] > ACP_FRESH_S:
            seen = self._acp_seen[spec.name] = (now, await acp_sessions(spec, self.guard.roots[0]))
        return seen[1]

    def _scan(self, spec: AgentSpec, only: str | None) -> list[AgentConversation]:
        base = projects_dir(spec)
        if base is None or not base.is_dir():
            return []
        prefixes = tuple(encode(str(root)) for root in self.guard.roots)
        name = f"{only}.jsonl" if only else "*.jsonl"
        files = [
            f
            for folder in base.iterdir()
            if folder.is_dir() and folder.name.startswith(prefixes)  # rule 2
            for f in folder.glob(name)
            if f.is_file()
        ]
        files.sort(key=_mtime, reverse=True)
        rawp, listed = self._rawp_ids(), []
        for file in files[:SCAN_LIMIT]:
            if file.stem in rawp or not _ID.match(file.stem):
                continue
            made = self._read(spec, file)
            if made is not None:
                listed.append(made)
            if len(listed) >= LIMIT:
                break
        return listed

    def _read(self, spec: AgentSpec, file: Path) -> AgentConversation | None:
        seen = _Transcript(file.stem)
        try:
            with file.open("rb") as handle:
                for line in handle.read(READ_LIMIT).splitlines():
                    seen.take(line)
        except OSError:
            return None
        if seen.cwd is None:
            return None
        try:
            workspace = self.guard.workspace(seen.cwd)  # rule 2: inside the roots, a directory
        except RawpError:
            return None
        return AgentConversation(
            agent_name=spec.name,
            conversation_id=file.stem,
            workspace_path=str(workspace),
            title=seen.title(),
            started_at=seen.started_at,
            updated_at=datetime.fromtimestamp(_mtime(file), UTC).isoformat(),
        )


class _Transcript:
    """What rule 1 and 3 read from a transcript's records."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.cwd: str | None = None
        self.started_at: str | None = None
        self.prompt: str | None = None
        self.titles: dict[str, str] = {}

    def take(self, line: bytes) -> None:
        try:
            record = json.loads(line)
        except ValueError:
            return
        if not isinstance(record, dict) or record.get("sessionId") not in (None, self.session_id):
            return
        kind = record.get("type")
        for record_type, field in TITLE_RECORDS:
            if kind == record_type and isinstance(record.get(field), str):
                self.titles[record_type] = record[field]  # the latest of each wins
        if kind not in ("user", "assistant"):
            return
        if self.cwd is None and isinstance(record.get("cwd"), str):
            self.cwd = record["cwd"]
        if self.started_at is None and isinstance(record.get("timestamp"), str):
            self.started_at = record["timestamp"]
        if kind == "user" and self.prompt is None and not record.get("isMeta"):
            self.prompt = _text(record.get("message"))

    def title(self) -> str:
        for record_type, _ in TITLE_RECORDS:
            if self.titles.get(record_type, "").strip():
                return _one_line(self.titles[record_type])
        return _one_line(self.prompt or "") or "(no prompt)"


def _text(message: object) -> str | None:
    """A user message's words; None for a tool result or a CLI command wrapper."""
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, list):
        parts = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        content = " ".join(p for p in parts if isinstance(p, str))
    if not isinstance(content, str) or not content.strip() or content.lstrip().startswith("<"):
        return None
    return content


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= TITLE_MAX else flat[: TITLE_MAX - 1] + "…"


def _mtime(file: Path) -> float:
    try:
        return file.stat().st_mtime
    except OSError:
        return 0.0
