"""Approval records for the master's audit log (issue 15 §4; master/edge/usage/audit.py).

Rules:

1. Every outcome of an approval prompt is reported: an answer, a refused press (a stranger, a
   forged option) and an expiry — with who pressed as a master subject, the option, the
   platform, and the tool the request is about (its name and a short preview of its input).
2. Who pressed is named the way the master names users: the session owner's subject with its
   last part replaced by the presser's platform id (`discord:42`, `slack:T1:U9`), since a
   prompt is only ever answered in the owner's workspace.
3. The preview is the tool input as compact JSON, passed through `redact` (the chat redactor,
   issue 15 §3: the preview is text leaving the agent's machine for a log people read) and
   cut to `PREVIEW_CHARS`. The full input is never sent.
4. A report goes to `POST /v1/edge/sessions/{id}/audit` as the session's owner, with a
   `record_id` chosen here, so a retry (after an unreachable master or a 5xx) is one record.
   A report that still fails is logged with what it held and dropped: the approval itself
   has been answered by then, and an audit outage must not stop the agent.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import orjson
from tenacity import (
    AsyncRetrying,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential_jitter,
)

from gateway.edge_client import EdgeApiError, EdgeClient
from rawp.clock import new_id
from rawp.events import ToolInvokeRequest

log = logging.getLogger(__name__)

PREVIEW_CHARS = 200
ATTEMPTS = 3
RETRY_AFTER_S = 0.5

ANSWERED, REFUSED, EXPIRED = "answered", "refused", "expired"


@dataclass(frozen=True)
class ApprovalRecord:
    outcome: str  # ANSWERED, REFUSED or EXPIRED
    interaction_id: str
    platform: str
    actor_id: str | None = None  # the platform's user id; None for an expiry
    option_id: str | None = None
    option_label: str | None = None
    tool: ToolInvokeRequest | None = None
    detail: str | None = None


AuditSink = Callable[[ApprovalRecord], Awaitable[None]]


async def no_audit(_: ApprovalRecord) -> None:
    """For renderers without a master (tests of rendering alone, the console without one)."""


def actor_subject(owner_subject: str, user_id: str) -> str:
    """Rule 2: `slack:T1:U2` + `U9` → `slack:T1:U9`; `discord:1` + `42` → `discord:42`."""
    return f"{owner_subject.rsplit(':', 1)[0]}:{user_id}"


def cut(text: str, size: int = PREVIEW_CHARS) -> str:
    return text if len(text) <= size else text[: size - 1] + "…"


def preview(tool: ToolInvokeRequest | None, redact: Callable[[str], str]) -> str | None:
    """Rule 3: a short, redacted look at the input; never the input itself."""
    if tool is None or not tool.input:
        return None
    shown = orjson.dumps(tool.input, option=orjson.OPT_SORT_KEYS).decode()
    # Redact before cutting, so a secret cut in two is still found whole.
    return cut(redact(shown[: PREVIEW_CHARS * 20]))


class EdgeAuditSink:
    """Reports one session's approval records to the master as its owner (rule 4)."""

    def __init__(
        self,
        edge: EdgeClient,
        owner_subject: str,
        session_id: str,
        *,
        redact: Callable[[str], str] = lambda text: text,
        retry_after_s: float = RETRY_AFTER_S,
    ) -> None:
        self._edge = edge
        self._owner = owner_subject
        self._session_id = session_id
        self._redact = redact
        self._retry_after_s = retry_after_s

    def body(self, record: ApprovalRecord) -> dict[str, Any]:
        tool = record.tool
        return {
            "record_id": new_id(),
            "outcome": record.outcome,
            "actor": actor_subject(self._owner, record.actor_id) if record.actor_id else None,
            "platform": record.platform,
            "interaction_id": record.interaction_id,
            "option_id": record.option_id,
            "option_label": record.option_label and cut(self._redact(record.option_label)),
            "tool_name": tool.tool_name if tool else None,
            "input_preview": preview(tool, self._redact),
            "detail": record.detail and cut(self._redact(record.detail)),
        }

    async def __call__(self, record: ApprovalRecord) -> None:
        body = self.body(record)
        path = f"/v1/edge/sessions/{quote(self._session_id)}/audit"
        retrying = AsyncRetrying(
            retry=retry_if_exception(_transient),  # a 4xx will not pass on a second try
            stop=stop_after_attempt(ATTEMPTS),
            wait=wait_exponential_jitter(
                multiplier=self._retry_after_s,
                max=4 * self._retry_after_s,
                jitter=self._retry_after_s,
            ),
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    await self._edge.call(self._owner, "POST", path, body)
        except EdgeApiError as exc:
            log.warning(
                "approval record for session %s not stored (%s): %s %s by %s",
                self._session_id,
                exc.error_code,
                body["outcome"],
                body["interaction_id"],
                body["actor"] or "nobody",
            )


def _transient(exc: BaseException) -> bool:
    """An unreachable master (status 0) or a 5xx: worth another try."""
    return isinstance(exc, EdgeApiError) and (exc.status == 0 or exc.status >= 500)
