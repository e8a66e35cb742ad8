"""Approvals answered in the browser go to the master's audit log (gateway.approvals.audit).

Issue 15 §4.

The relay forwards frames verbatim (adapters.web.proxy rule 3), so without this an answer given
in the web edge would reach the agent but never the audit log, which the chat edges write
for every answer.

Rules:

1. The relay shows this every frame from the master. It keeps:
   - what each open prompt offered (`agent.interaction.request`: option labels, the tool's
     `invocation_id`);
   - the tools asked about (`tool.invoke.request`), for the record's tool name and preview;
   - the session's `.env` fingerprints (`session.capabilities`), so that the preview is
     redacted as the chat edges redact it (gateway.redaction.redact).
   Each of these is bounded: the oldest entries go first.
2. After the relay has forwarded a browser's `control.interaction.response`, one record
   `answered` is reported: platform `web`, actor the signed-in subject itself, and the option
   and its label. It is reported after the answer, so the agent never waits on the audit log.
   A report that fails is logged and dropped (gateway.approvals.audit rule 4).
3. Frames that are not JSON, or not these types, are passed over. The master still answers a
   bad frame with `session.error`; auditing never ends the relay.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from typing import Any

import orjson
from pydantic import ValidationError

from gateway.approvals.audit import ANSWERED, ApprovalRecord, EdgeAuditSink
from gateway.edge_client import EdgeClient
from gateway.redaction.redact import Redactor
from rawp.events import InteractionRequest, SecretFingerprints, ToolInvokeRequest

log = logging.getLogger(__name__)

KEPT = 256  # prompts and tools remembered per relayed socket (rule 1)
WATCHED = (b'"agent.interaction.request"', b'"tool.invoke.request"', b'"session.capabilities"')


class WebApprovals:
    """One relayed socket's approval bookkeeping (rules 1–3)."""

    def __init__(self, edge: EdgeClient, subject: str, session_id: str) -> None:
        self.subject = subject
        self.redactor = Redactor()
        self.audit = EdgeAuditSink(edge, subject, session_id, redact=self.redactor.redact)
        self._prompts: OrderedDict[str, InteractionRequest] = OrderedDict()
        self._tools: OrderedDict[str, ToolInvokeRequest] = OrderedDict()

    def from_master(self, text: str) -> None:
        """Rule 1; most frames are passed over without being parsed."""
        data = text.encode()
        if not any(kind in data for kind in WATCHED):
            return
        frame = _frame(data)
        kind, payload = frame.get("type"), frame.get("payload")
        try:
            if kind == "agent.interaction.request":
                asked = InteractionRequest.model_validate(payload)
                _keep(self._prompts, asked.interaction_id, asked)
            elif kind == "tool.invoke.request":
                tool = ToolInvokeRequest.model_validate(payload)
                _keep(self._tools, tool.invocation_id, tool)
            elif kind == "session.capabilities" and isinstance(payload, dict):
                found = payload.get("secret_fingerprints")
                if found is not None:
                    self.redactor.use_fingerprints(SecretFingerprints.model_validate(found))
        except ValidationError:
            return  # rule 3: the master relays what the client sent; not ours to judge

    async def from_browser(self, text: str) -> None:
        """Rule 2, for a frame the relay has just forwarded."""
        data = text.encode()
        if b'"control.interaction.response"' not in data:
            return
        frame = _frame(data)
        payload = frame.get("payload")
        if frame.get("type") != "control.interaction.response" or not isinstance(payload, dict):
            return
        interaction_id, option_id = payload.get("interaction_id"), payload.get("option_id")
        if not isinstance(interaction_id, str) or not isinstance(option_id, (str, type(None))):
            return
        asked = self._prompts.pop(interaction_id, None)
        label = None
        tool = None
        if asked is not None:
            label = next((o.label for o in asked.options if o.option_id == option_id), None)
            if asked.invocation_id is not None:
                tool = self._tools.get(asked.invocation_id)
        record = ApprovalRecord(
            outcome=ANSWERED,
            interaction_id=interaction_id,
            platform="web",
            actor_id=self.subject.rsplit(":", 1)[-1],  # gateway.approvals.audit rule 2: the subject
            option_id=option_id,
            option_label=label,
            tool=tool,
        )
        await self.audit(record)


def _frame(data: bytes) -> dict[str, Any]:
    try:
        frame = orjson.loads(data)
    except orjson.JSONDecodeError:
        return {}
    return frame if isinstance(frame, dict) else {}


def _keep(kept: OrderedDict, key: str, value: Any) -> None:
    kept[key] = value
    kept.move_to_end(key)
    while len(kept) > KEPT:
        kept.popitem(last=False)
