"""The agents' own conversations on a node that RAWP did not start (issue 30 §2,
docs/edge-api.md): `GET /v1/edge/nodes/{id}/agent-sessions[?agent=<name>]`.

Rules:

1. The node must be the caller's: another user's (or an unknown) node is `404
   NODE_NOT_FOUND`, so nobody lists, or later picks up, a conversation on a machine that is
   not theirs (picking one up is `POST /v1/edge/nodes/{id}/sessions` with
   `resume_conversation`, under the same check).
2. The master asks the client's `GET /v1/agent-sessions`, which lists only conversations in
   its allowed roots (client.sessions.terminal); the answer is read through
   `AgentConversationList`, so only its fields reach the edge. A client refusal with 400/403/404
   reaches the edge with the client's status and code; anything else is `502`.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import quote

from pydantic import ValidationError

from master.client_calls import ClientCaller, NodeCallError
from master.edge.access.auth import EdgeUser
from master.edge.sessions.nodes import NodeDirectory
from rawp.errors import BadRequest, RawpError
from rawp.rest import AgentConversationList

log = logging.getLogger("rawp.master.edge.agent_sessions")

PASSED_ON = (400, 403, 404)
AGENT_NAME_MAX = 200


class EdgeAgentSessions:
    def __init__(self, calls: ClientCaller, nodes: NodeDirectory) -> None:
        self._calls = calls
        self._nodes = nodes

    async def list(self, user: EdgeUser, node_id: str, agent: str | None) -> dict[str, Any]:
        await self._nodes.owned(user, node_id)  # rule 1
        if agent is not None and not 0 < len(agent) <= AGENT_NAME_MAX:
            raise BadRequest("agent must be an agent's name", "INVALID_REQUEST")
        path = "/v1/agent-sessions" + (f"?agent={quote(agent, safe='')}" if agent else "")
        reply = await self._calls.call(node_id, "GET", path)
        body = reply.body if isinstance(reply.body, dict) else {}
        if reply.status == 200:
            try:
                return AgentConversationList.model_validate(body).wire()  # rule 2
            except ValidationError:
                raise NodeCallError("the node answered the agent sessions wrongly") from None
        code, message = body.get("error_code"), body.get("message")
        if reply.status in PASSED_ON and isinstance(code, str):
            text = message if isinstance(message, str) else code
            raise RawpError(text, code, status=reply.status)
        raise NodeCallError(f"the node answered the agent sessions with HTTP {reply.status}")
