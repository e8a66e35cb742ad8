"""The gateway's REST connection to the master's Edge API (RAWP §9.1–§9.3, A-22).

Rules:

1. A gateway acts for many chat users. For each one it trades the edge service credential
   (`RAWP_EDGE_SECRET`) for a short-lived user token (`POST /v1/edge/auth/token`, §9.1) with
   the subject `platform:id` (`discord:123`, `slack:T1:U2`, `console:me`), keeps it, and asks
   again a minute before it expires (E-AUTH-02: every call carries a valid token).
2. A 401 on a call means the token died early (the master restarted with a new key, a clock
   jump): the token is dropped, a new one fetched, and the call retried once.
3. Every non-2xx answer becomes `EdgeApiError` with the master's §7.1 `error_code` and
   `message`; an unreachable master is `EdgeApiError(0, "MASTER_UNREACHABLE", …)`. The secret
   and tokens never appear in a log line or an error.
4. `open_link` gives a session's `SessionLink` (gateway.edge_link): the edge WebSocket that
   reconnects with fresh tickets.
5. A gateway started together with its master (Docker, compose, systemd) may come up first:
   `wait_until_reachable` waits for the master to answer at all — refused connections, names
   that do not resolve yet and resets alike — before anything else is asked of it.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import quote, urlencode

import aiohttp
import orjson
from pydantic import BaseModel, ValidationError

from rawp.clock import SYSTEM_CLOCK, Clock
from rawp.rest import (
    AgentConversation,
    AgentConversationList,
    CreateSession,
    EdgeTokenGrant,
    NodeInfo,
    NodeList,
    PairingUrl,
    SessionCreated,
    SessionInfo,
    SessionList,
    TicketGrant,
)

ReplyT = TypeVar("ReplyT", bound=BaseModel)

log = logging.getLogger(__name__)

TOKEN_MARGIN_S = 60.0  # renew a user token this long before it expires (rule 1)
REQUEST_TIMEOUT_S = 30.0  # creating a session waits for the client's session/init


class EdgeApiError(Exception):
    """The master refused a call, or could not be reached (status 0)."""

    def __init__(self, status: int, error_code: str, message: str) -> None:
        super().__init__(f"{error_code}: {message}")
        self.status = status
        self.error_code = error_code
        self.message = message


@dataclass
class _Token:
    value: str
    expires_at: float  # clock.monotonic()


class EdgeClient:
    def __init__(
        self,
        master_url: str,
        edge_secret: str,
        *,
        clock: Clock = SYSTEM_CLOCK,
        timeout_s: float = REQUEST_TIMEOUT_S,
    ) -> None:
        if not edge_secret:
            raise ValueError("the gateway needs the edge service credential (RAWP_EDGE_SECRET)")
        self.master_url = master_url.rstrip("/")
        self._secret = edge_secret
        self._clock = clock
        self._timeout = aiohttp.ClientTimeout(total=timeout_s)
        self._http: aiohttp.ClientSession | None = None
        self._tokens: dict[str, _Token] = {}
        self._token_locks: dict[str, asyncio.Lock] = {}

    def __repr__(self) -> str:  # never the secret (rule 3)
        return f"EdgeClient({self.master_url!r})"

    @property
    def http(self) -> aiohttp.ClientSession:
        if self._http is None or self._http.closed:
            self._http = aiohttp.ClientSession(timeout=self._timeout)
        return self._http

    async def close(self) -> None:
        if self._http is not None:
            await self._http.close()
            self._http = None

    async def wait_until_reachable(self, timeout_s: float, interval_s: float = 0.5) -> None:
        """Rule 5: return once `GET /v1/health` gets any HTTP answer; `EdgeApiError`
        (MASTER_UNREACHABLE, with the last cause) when none came within `timeout_s`."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        said = False
        while True:
            try:
                async with self.http.get(
                    self.master_url + "/v1/health", timeout=aiohttp.ClientTimeout(total=5)
                ) as response:
                    await response.read()
                if said:
                    log.info("the master at %s answers", self.master_url)
                return
            except (aiohttp.ClientError, TimeoutError) as exc:
                cause = str(exc) or type(exc).__name__
            if loop.time() + interval_s > deadline:
                raise EdgeApiError(
                    0,
                    "MASTER_UNREACHABLE",
                    f"the master at {self.master_url} did not answer within {timeout_s:g} s: "
                    f"{cause}",
                )
            if not said:
                log.warning("waiting for the master at %s (%s)", self.master_url, cause)
                said = True
            await asyncio.sleep(interval_s)

    # --- user tokens (rules 1 and 2) ---------------------------------------------------------

    async def token(self, subject: str) -> str:
        lock = self._token_locks.setdefault(subject, asyncio.Lock())
        async with lock:  # one exchange per subject at a time, however many callers wait
            held = self._tokens.get(subject)
            if held is not None and self._clock.monotonic() < held.expires_at - TOKEN_MARGIN_S:
                return held.value
            status, body = await self._send(
                "POST",
                "/v1/edge/auth/token",
                {"subject": subject},
                authorization=f"Bearer {self._secret}",
            )
            if status != 200:
                raise _error(status, body)
            grant = _read(EdgeTokenGrant, body, "a user token")
            self._tokens[subject] = _Token(
                grant.access_token, self._clock.monotonic() + grant.expires_in
            )
            return grant.access_token

    def forget_token(self, subject: str) -> None:
        self._tokens.pop(subject, None)

    async def call(self, subject: str, method: str, path: str, body: Any = None) -> Any:
        """One Edge API call as `subject`; the decoded answer (None for 204)."""
        for attempt in (1, 2):
            token = await self.token(subject)
            status, answer = await self._send(method, path, body, authorization=f"Bearer {token}")
            if status == 401 and attempt == 1:
                self.forget_token(subject)  # rule 2
                continue
            if 200 <= status < 300:
                return answer
            raise _error(status, answer)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _send(
        self, method: str, path: str, body: Any, *, authorization: str
    ) -> tuple[int, Any]:
        headers = {"Authorization": authorization}
        data = None
        if body is not None:
            headers["Content-Type"] = "application/json"
            data = orjson.dumps(body)
        try:
            async with self.http.request(
                method, self.master_url + path, data=data, headers=headers
            ) as response:
                raw = await response.read()
                status = response.status
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise EdgeApiError(
                0, "MASTER_UNREACHABLE", f"the master at {self.master_url} did not answer: {exc}"
            ) from None
        if not raw:
            return status, None
        try:
            return status, orjson.loads(raw)
        except orjson.JSONDecodeError:
            return status, {"message": raw[:200].decode(errors="replace")}

    # --- the routes (docs/edge-api.md) ---------------------------------------------------------

    async def list_nodes(self, subject: str) -> list[NodeInfo]:
        answer = await self.call(subject, "GET", "/v1/edge/nodes")
        return _read(NodeList, answer, "the node listing").nodes

    async def create_session(
        self,
        subject: str,
        node_id: str,
        agent_name: str,
        workspace_path: str | None = None,
        worktree: bool = False,
        fork_of: str | None = None,
        *,
        resume: str | None = None,
        resume_conversation: str | None = None,
    ) -> SessionCreated:
        """EP-E4. Issue 30 §2: `resume` continues an ended session's conversation; `fork_of`
        continues a copy of a session's conversation (`resume` and `fork` on the wire);
        `resume_conversation` picks up a conversation of the agent's own RAWP did not start."""
        try:
            body = CreateSession(
                agent_name=agent_name,
                workspace_path=workspace_path or None,
                worktree=worktree or None,
                resume=resume or fork_of,
                fork=True if fork_of is not None else None,
                resume_conversation=resume_conversation,
            )
        except ValidationError as exc:  # what the master would refuse, refused before the call
            raise EdgeApiError(400, "INVALID_REQUEST", f"a start: {_problem(exc)}") from None
        path = f"/v1/edge/nodes/{quote(node_id)}/sessions"
        return _read(SessionCreated, await self.call(subject, "POST", path, body.wire()), "a start")

    async def list_sessions(self, subject: str) -> list[SessionInfo]:
        answer = await self.call(subject, "GET", "/v1/edge/sessions")
        return _read(SessionList, answer, "the session listing").sessions

    async def end_session(self, subject: str, session_id: str) -> None:
        await self.call(subject, "DELETE", f"/v1/edge/sessions/{quote(session_id)}")

    async def agent_sessions(self, subject: str, node_id: str) -> list[AgentConversation]:
        """Issue 30 §2: the agents' own conversations on the node that RAWP did not start."""
        path = f"/v1/edge/nodes/{quote(node_id)}/agent-sessions"
        answer = await self.call(subject, "GET", path)
        return _read(AgentConversationList, answer, "the agent sessions").conversations

    async def session_worktree(self, subject: str, session_id: str, action: str) -> dict[str, Any]:
        """Issue 30 §3: `diff`, `merge` or `discard` the session's git worktree."""
        path = f"/v1/edge/sessions/{quote(session_id)}/worktree"
        answer = await self.call(subject, "POST", path, {"action": action})
        return answer if isinstance(answer, dict) else {}

    # Issue 30 §5: scheduled prompts, kept by the master per user (docs/schedules.md).

    async def create_schedule(self, subject: str, body: dict[str, Any]) -> dict[str, Any]:
        answer = await self.call(subject, "POST", "/v1/edge/schedules", body)
        return answer if isinstance(answer, dict) else {}

    async def list_schedules(self, subject: str) -> list[dict[str, Any]]:
        answer = await self.call(subject, "GET", "/v1/edge/schedules")
        listed = answer.get("schedules") if isinstance(answer, dict) else None
        return [one for one in listed or [] if isinstance(one, dict)]

    async def pause_schedule(self, subject: str, schedule_id: str, pause: bool) -> dict[str, Any]:
        verb = "pause" if pause else "resume"
        path = f"/v1/edge/schedules/{quote(schedule_id)}/{verb}"
        answer = await self.call(subject, "POST", path)
        return answer if isinstance(answer, dict) else {}

    async def delete_schedule(self, subject: str, schedule_id: str) -> None:
        await self.call(subject, "DELETE", f"/v1/edge/schedules/{quote(schedule_id)}")

    async def new_ticket(self, subject: str, session_id: str) -> str:
        """A-22: a fresh single-use `edge_ws_ticket` for the session."""
        answer = await self.call(subject, "POST", f"/v1/edge/sessions/{quote(session_id)}/tickets")
        return _read(TicketGrant, answer, "a ticket").edge_ws_ticket

    async def usage(self, subject: str, session_id: str | None = None) -> dict[str, Any]:
        """Issue 16 §4: the user's usage per node (today, this month), and the session's."""
        query = f"?{urlencode({'session_id': session_id})}" if session_id else ""
        path = "/v1/edge/usage" + query
        return await self.call(subject, "GET", path)

    async def pairing_url(self, subject: str) -> PairingUrl:
        answer = await self.call(subject, "POST", "/v1/edge/pairing-urls")
        return _read(PairingUrl, answer, "a pairing URL")

    def stream_url(self, session_id: str, ticket: str, last_message_id: str | None) -> str:
        """`/v1/edge/ws/stream` with the ticket (never logged: it is a credential)."""
        base = self.master_url.replace("https://", "wss://", 1).replace("http://", "ws://", 1)
        query = {"ticket": ticket, "session_id": session_id}
        if last_message_id:
            query["last_message_id"] = last_message_id
        return f"{base}/v1/edge/ws/stream?{urlencode(query)}"


def _read(model: type[ReplyT], answer: Any, what: str) -> ReplyT:
    """The master's answer as the model both sides share (rawp.rest), or a clear error."""
    try:
        return model.model_validate(answer)
    except ValidationError as exc:
        message = f"the master's answer to {what} did not read ({_problem(exc)})"
        raise EdgeApiError(0, "BAD_REPLY", message) from None


def _problem(exc: ValidationError) -> str:
    """The first thing wrong, where: `agent_name: String should have at most 200 characters`."""
    first = exc.errors()[0]
    return f"{'.'.join(str(part) for part in first['loc']) or 'the body'}: {first['msg']}"


def _error(status: int, body: Any) -> EdgeApiError:
    if isinstance(body, dict):
        code = body.get("error_code") or f"HTTP_{status}"
        return EdgeApiError(status, str(code), str(body.get("message") or code))
    return EdgeApiError(status, f"HTTP_{status}", f"the master answered HTTP {status}")
