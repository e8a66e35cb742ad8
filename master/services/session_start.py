"""Starting and reattaching sessions on a client (§5.1, §4.1.8, K-03): the master as caller.

- A node whose two config scopes are not both synced gets no `session/init` at all: the
  caller receives `503 CONFIG_NOT_SYNCED` before anything is sent (M-SESS-01, K-03).
- A new session is pinned to the latest snapshot of both scopes before the call (M-SESS-02,
  §4.1.8), and its traffic is throttled by the pinned `rate_limit` (M-PIN-05).
- The request carries a UUID v4 `session_id` and a fresh random `ticket`, plus `agent_name` and
  `workspace_path` for a new session (M-SESS-03). The ticket is the master's (K-12); the client
  accepts it once, within 60 seconds (docs/protocol.md).
- A reattach keeps the session's pinned config (M-PIN-03) and gets a new ticket; a TERMINATED
  session is not reattached (404). A refused `session/init` ends the new session (INIT →
  TERMINATED, a transition of `rawp.session_state`'s table, never an assignment).
- The data plane is opened at `wss://{host:port}/v1/ws/stream?ticket=…&session_id=…`
  (`ws://` for an `http://` client in development), M-SESS-04, under the same §3.2 address
  policy as the calls (`addresses`, used by `master.services.pinning.connect_pinned`).

The Edge API (next issue) calls `start` from `POST /v1/edge/nodes/{id}/sessions`.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from master.client_calls import ClientCaller
from master.services.addresses import AddressPolicy
from master.services.config_scopes import ConfigScopes
from rawp.clock import new_id, new_secret
from rawp.config import PinnedConfig
from rawp.errors import NotFound, RawpError
from rawp.rest import SessionInit
from rawp.session_state import SessionEvent, SessionState


class SessionInitFailed(RawpError):
    """The client refused `session/init`; its status and code are in the message."""

    status = 502
    default_code = "SESSION_INIT_FAILED"


@dataclass(frozen=True)
class StartedSession:
    session_id: str
    ticket: str = field(repr=False)
    stream_url: str = field(repr=False)  # carries the ticket
    pinned: PinnedConfig
    client_reply: Any


def stream_url(client_address: str, ticket: str, session_id: str) -> str:
    """§5.3 data-plane URL for a client whose base URL is `client_address` (A-02)."""
    scheme, _, rest = client_address.partition("://")
    ws = "wss" if scheme == "https" else "ws"
    query = urlencode({"ticket": ticket, "session_id": session_id})
    return f"{ws}://{rest.rstrip('/')}/v1/ws/stream?{query}"


class SessionStarter:
    def __init__(self, config: ConfigScopes, calls: ClientCaller) -> None:
        self._config = config
        self._calls = calls

    @property
    def addresses(self) -> AddressPolicy:
        """The §3.2 policy the data-plane socket to a client is opened under."""
        return self._calls.addresses

    async def start(
        self,
        *,
        node_id: str,
        user_id: str,
        agent_name: str,
        workspace_path: str,
        worktree: bool = False,
        resume: str | None = None,
        fork: bool = False,
        resume_conversation: str | None = None,
    ) -> StartedSession:
        node = await self._calls.node(node_id)
        session_id = new_id()
        pinned = await self._config.pin_session(  # raises 503 before any call (K-03)
            session_id=session_id,
            node_id=node_id,
            user_id=user_id,
            agent_name=agent_name,
            workspace_path=workspace_path,
        )
        ticket = new_secret()
        body = SessionInit(
            session_id=session_id,
            ticket=ticket,
            agent_name=agent_name,
            workspace_path=workspace_path,
            worktree=worktree or None,
            resume=resume,
            fork=fork or None,
            resume_conversation=resume_conversation,
        ).wire()
        try:
            reply = await self._calls.call(
                node_id, "POST", "/v1/session/init", json=body, session_id=session_id
            )
        except RawpError:
            await self._config.move_session(session_id, SessionEvent.TERMINATE)
            raise
        if reply.status not in (200, 201):
            await self._config.move_session(session_id, SessionEvent.TERMINATE)
            raise _refused(reply)
        if worktree and not (isinstance(reply.body, dict) and reply.body.get("worktree_branch")):
            # A client that ignored the field (§1.3) runs in the workspace itself: never that.
            with contextlib.suppress(RawpError):  # ended below on our side in any case
                await self._calls.call(node_id, "DELETE", f"/v1/session/{session_id}")
            await self._config.move_session(session_id, SessionEvent.TERMINATE)
            raise SessionInitFailed(
                "the node's client does not make worktrees; update rawp there",
                client_status=400,
                client_error_code="WORKTREES_UNSUPPORTED",
                client_message="the node's client does not make worktrees; update rawp there",
            )
        return StartedSession(
            session_id,
            ticket,
            stream_url(node.client_address, ticket, session_id),
            pinned,
            reply.body,
        )

    async def reattach(
        self,
        *,
        node_id: str,
        session_id: str,
        last_message_id: str | None = None,
        last_sync_timestamp: str | None = None,
    ) -> StartedSession:
        node = await self._calls.node(node_id)
        pinned = await self._config.pinned_config(session_id)  # unchanged (M-PIN-03)
        status = await self._config.session_status(session_id)
        if status is SessionState.TERMINATED:
            raise NotFound(f"session {session_id} has ended", "SESSION_NOT_FOUND")
        ticket = new_secret()
        body = SessionInit(
            session_id=session_id,
            ticket=ticket,
            reattach=True,
            last_message_id=last_message_id,
            last_sync_timestamp=last_sync_timestamp,
        ).wire()
        reply = await self._calls.call(
            node_id, "POST", "/v1/session/init", json=body, session_id=session_id
        )
        if reply.status not in (200, 201):
            raise _refused(reply)
        return StartedSession(
            session_id,
            ticket,
            stream_url(node.client_address, ticket, session_id),
            pinned,
            reply.body,
        )


def _refused(reply) -> SessionInitFailed:
    code = reply.body.get("error_code") if isinstance(reply.body, dict) else None
    message = reply.body.get("message") if isinstance(reply.body, dict) else None
    return SessionInitFailed(
        f"the client refused session/init with HTTP {reply.status}"
        + (f" ({code})" if code else ""),
        client_status=reply.status,
        client_error_code=code,
        client_message=message,
    )
