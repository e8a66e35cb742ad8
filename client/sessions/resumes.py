"""The agents' own conversation ids, kept so a later session can resume one (issue 30 §2).

Rules (docs/agents.md "Resume", docs/protocol.md):

1. When a session's agent learns its own id for the conversation (Claude Code's `session_id`
   in `system/init`, the ACP `sessionId`), the client records it under the RAWP session id
   in `<state_dir>/agent-sessions.json` (written through a temporary file and `os.replace`),
   at once, so a client that is killed or restarted still knows it.
2. `session/init` with `resume: <an earlier RAWP session id>` looks the record up: the new
   session must run the same agent; the agent then continues that conversation (Claude Code
   `--resume <id>`, ACP `session/load`) in the workspace the earlier session ran in (its
   worktree if it had one; Claude Code keeps conversations per directory), whatever the
   request names; a workspace gone since is refused by the path guard. An unknown id is a
   404 `RESUME_NOT_FOUND`, another agent a 409 `RESUME_AGENT_MISMATCH`, a kind that cannot
   resume a 400 `RESUME_UNSUPPORTED`.
3. At most `LIMIT` records are kept; the oldest go first.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from rawp.errors import Conflict, NotFound

log = logging.getLogger(__name__)

RECORD_FILE = "agent-sessions.json"
LIMIT = 1_000


@dataclass(frozen=True)
class AgentSession:
    """What rule 1 records for one RAWP session."""

    agent_name: str
    agent_session_id: str
    workspace: str = ""  # where it ran: Claude Code keeps conversations per directory


class AgentSessions:
    """The agents' conversation ids of this client's sessions, in the state directory."""

    def __init__(self, state_dir: Path) -> None:
        self.file = Path(state_dir) / RECORD_FILE
        self.records: dict[str, AgentSession] = self._load()

    def _load(self) -> dict[str, AgentSession]:
        if not self.file.exists():
            return {}
        try:
            data = json.loads(self.file.read_text())
            return {key: AgentSession(**value) for key, value in data.items()}
        except (ValueError, TypeError) as exc:
            log.warning("%s is unreadable (%s); no session can be resumed", self.file, exc)
            return {}

    def remember(
        self, session_id: str, agent_name: str, agent_session_id: str, workspace: str = ""
    ) -> None:
        """Rule 1; rule 3 drops the oldest."""
        record = AgentSession(agent_name, agent_session_id, workspace)
        if self.records.get(session_id) == record:
            return
        self.records.pop(session_id, None)
        self.records[session_id] = record
        while len(self.records) > LIMIT:
            self.records.pop(next(iter(self.records)))
        self.file.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.file.with_name(self.file.name + ".tmp")
        tmp.write_text(json.dumps({k: asdict(v) for k, v in self.records.items()}, indent=1))
        os.replace(tmp, self.file)

    def lookup(self, session_id: str, agent_name: str) -> AgentSession:
        """Rule 2: the conversation to resume (the agent's own id, where it ran)."""
        record = self.records.get(session_id)
        if record is None:
            raise NotFound(
                "no conversation of that session is known here to resume", "RESUME_NOT_FOUND"
            )
        if record.agent_name != agent_name:
            raise Conflict(
                f"that session ran agent {record.agent_name!r}, not {agent_name!r}",
                "RESUME_AGENT_MISMATCH",
            )
        return record
