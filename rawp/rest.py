"""REST bodies between the tiers, as one set of models both sides use (issue 29 step 1).

The master validates what it is sent with these models and builds its answers from them; the
client and the gateway build what they send with them and read the master's answers through
them. A field renamed on one side is then renamed on the other, and a wrong shape is a clear
error at the boundary rather than a `KeyError` deep inside a caller.

Unknown keys are ignored everywhere (§1.3: a newer peer may send more). Requests are strict
(`"1"` is not an integer); the spec's routes and fields are cited on each model. Error bodies
are `{error_code, message}` on every route (§7.1): `ErrorBody`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SESSION_STATUSES = ("INIT", "RUNNING", "DETACHED", "TERMINATED")
NodeStatus = Literal["online", "busy", "offline"]
# An agent's own conversation id (Claude Code: a UUID, the name of its transcript file): one
# path segment at most, so it can never name a file outside the agent's own folder.
CONVERSATION_ID = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$"
TITLE_MAX = 100  # characters of a listed conversation's title


class Body(BaseModel):
    """A REST body: unknown keys ignored (§1.3), strict types, frozen once read."""

    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)

    def wire(self) -> dict[str, Any]:
        """The JSON object sent: fields left unset (`None`) are left out, as the spec's
        examples leave out an absent optional field."""
        return self.model_dump(mode="json", exclude_none=True)


class ErrorBody(Body):
    """Every HTTP error (§7.1)."""

    error_code: str = Field(min_length=1)
    message: str


# --- pairing and tokens, client ↔ master (§3) ------------------------------------------------


class ClientCredentials(Body):
    """The tokens the master uses to call the client (§3.3, K-01): handed over at pairing."""

    access_token: str = Field(min_length=1)
    refresh_token: str = Field(min_length=1)
    expires_in: int = Field(gt=0)


class PairRequest(Body):
    """`POST /v1/auth/pair` (§3.3, EP-M1)."""

    pairing_token: str = Field(min_length=1)
    client_address: str = Field(min_length=1)
    device_name: str = Field(min_length=1, max_length=100)
    client_credentials: ClientCredentials


class RefreshRequest(Body):
    """`POST /v1/auth/refresh` (§3.4)."""

    refresh_token: str = Field(min_length=1)


class TokenGrant(Body):
    """The master's answer to pairing and to a refresh (§3.3, §3.4): the node's tokens and the
    master's public key. A refresh may leave the key out; the client keeps the paired one."""

    access_token: str = Field(min_length=1)
    refresh_token: str = Field(min_length=1)
    server_credentials: dict[str, Any] | None = None
    node_id: str | None = None
    expires_in: int | None = Field(default=None, gt=0)
    token_type: str = "Bearer"  # RFC 6749 §5.1: compared without case by whoever reads it


class ConfigSnapshot(Body):
    """`PUT /v1/nodes/config/{scope}` (§4.1.6, C-CFG-04): one scope, every field, always."""

    config_version: int = Field(ge=1)
    effective_at: str
    reason: str | None = None
    limits: dict[str, Any] | None = None
    capabilities: list[str] | None = None


class ConfigConflict(Body):
    """`409` to a stale `PUT` (K-02): the version the master holds."""

    error_code: str
    message: str
    current_config_version: int


# --- sessions, master → client (§5) ------------------------------------------------------------


class SessionInit(Body):
    """`POST /v1/session/init` (EP-C5, §5.1): start a session on the client, or reattach one
    (K-03: `reattach` with the edge's last `message_id` or sync time, so the client replays)."""

    session_id: str
    ticket: str
    agent_name: str | None = None
    workspace_path: str | None = None
    reattach: bool = False
    last_sync_timestamp: str | None = None
    last_message_id: str | None = None
    # Extension (issue 30 §3, docs/worktrees.md): work in a new git worktree and branch. Sent
    # only when true; a client that did make one names its branch in the answer.
    worktree: bool | None = None
    # Extension (issue 30 §2, docs/protocol.md): continue the agent's own conversation of this
    # earlier RAWP session (same agent). Sent only when resuming.
    resume: str | None = None
    # With `resume`: continue a copy under a new id; the earlier conversation stays as it was.
    fork: bool | None = None
    # Extension (issue 30 §2, docs/agents.md "Resume"): continue a conversation the agent keeps
    # itself that RAWP did not start (a terminal session), by the agent's own id; only an id
    # the client's listing (`GET /v1/agent-sessions`) returns is accepted.
    resume_conversation: str | None = Field(default=None, pattern=CONVERSATION_ID)


class AgentConversation(Body):
    """One conversation an agent keeps on the machine that RAWP did not start (issue 30 §2):
    `GET /v1/agent-sessions` on the client, `GET /v1/edge/nodes/{id}/agent-sessions` on the
    master. `conversation_id` is the agent's own (Claude Code's session id)."""

    agent_name: str
    conversation_id: str = Field(pattern=CONVERSATION_ID)
    workspace_path: str  # where it ran, inside the client's allowed roots
    title: str = Field(max_length=TITLE_MAX)  # its title, else its first prompt, cut
    started_at: str | None = None
    updated_at: str


class AgentConversationList(Body):
    conversations: list[AgentConversation]


# --- the Edge API (§9, docs/edge-api.md) -------------------------------------------------------


class EdgeTokenRequest(Body):
    """`POST /v1/edge/auth/token` (§9.1): a gateway's token for one platform user."""

    subject: str = Field(min_length=1)


class EdgeTokenGrant(Body):
    access_token: str = Field(min_length=1)
    token_type: Literal["Bearer"] = "Bearer"
    expires_in: int = Field(gt=0)


class PairingUrl(Body):
    """`POST /v1/edge/pairing-urls` → 201."""

    pairing_url: str
    expires_at: str
    expires_in: int


class ConfigVersions(Body):
    limits: int | None = None
    capabilities: int | None = None


class NodeInfo(Body):
    """One entry of `GET /v1/edge/nodes` (EP-E1, K-09)."""

    node_id: str
    device_name: str
    status: NodeStatus
    last_seen: str
    active_sessions_count: int = Field(ge=0)
    config_versions: ConfigVersions = ConfigVersions()
    capabilities: list[str] | None = None


class NodeList(Body):
    nodes: list[NodeInfo]


class CreateSession(Body):
    """`POST /v1/edge/nodes/{node_id}/sessions` (EP-E4); no workspace: the client's default
    (A-21)."""

    agent_name: str = Field(min_length=1, max_length=200)
    workspace_path: str | None = Field(default=None, min_length=1, max_length=4096)
    # Issue 30 §3: the session works in its own git worktree (docs/worktrees.md). Sent only
    # when asked for, so a start without it reads as it always did.
    worktree: bool | None = None
    # Issue 30 §2: continue the agent's conversation of this earlier session of the caller's,
    # on the same node with the same agent (docs/edge-api.md).
    resume: str | None = Field(default=None, min_length=1, max_length=64)
    # With `resume`: a copy of that conversation under a new id, the earlier one left as it was.
    fork: bool | None = None
    # Issue 30 §2: continue a conversation of the agent's own on that node that RAWP did not
    # start (one `GET /v1/edge/nodes/{id}/agent-sessions` lists), by the agent's id.
    resume_conversation: str | None = Field(default=None, pattern=CONVERSATION_ID)


class TicketGrant(Body):
    """`POST /v1/edge/sessions/{id}/tickets` → 201 (A-22): a fresh single-use ticket."""

    session_id: str
    edge_ws_ticket: str = Field(min_length=1)
    ticket_expires_in: int = Field(gt=0)


class SessionCreated(TicketGrant):
    """EP-E4 → 201: the session, RUNNING, with its first ticket and pinned config (A-09)."""

    status: str
    pinned_config_versions: ConfigVersions


class SessionInfo(Body):
    """One entry of `GET /v1/edge/sessions` (EP-E5)."""

    session_id: str
    node_id: str
    agent_name: str
    status: str
    created_at: str
    last_activity_at: str
    pinned_config_versions: ConfigVersions


class SessionList(Body):
    sessions: list[SessionInfo]
