"""An ACP agent's own sessions, through `session/list` (issue 30 §2, client.sessions.terminal).

Rules:

1. Only an agent that advertises `agentCapabilities.sessionCapabilities.list` in its
   `initialize` answer is asked (the ACP spec: a client MUST NOT call `session/list`
   otherwise); one that does not lists nothing.
2. The agent is started for the listing alone, in the first allowed root with its own `env`,
   asked `session/list` (no `cwd` filter: the client keeps only sessions whose `cwd` is inside
   its allowed roots, client.sessions.terminal rule 2), following `nextCursor` for at most
   `PAGES` pages, then ended (SIGTERM, SIGKILL after a grace). The whole listing has
   `LIST_TIMEOUT_S`; an agent that fails or is too slow lists nothing, and says so in the log.
3. The agent may not call back into the client while listing: no file, no permission.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, RequestError
from acp.client.connection import ClientSideConnection
from acp.schema import ClientCapabilities, Implementation

from client.agents.base import AgentSpec

log = logging.getLogger(__name__)

PAGES = 5
LIST_TIMEOUT_S = 15.0
GRACE_S = 2.0


class _NoCallbacks:
    """Rule 3: the client side of a listing connection."""

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        return None

    async def request_permission(self, *args: Any, **_: Any) -> Any:
        raise RequestError.method_not_found("session/request_permission")

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None


async def acp_sessions(spec: AgentSpec, cwd: Path) -> list[dict[str, Any]]:
    """Rules 1–2: the agent's `SessionInfo`s as plain dicts (`sessionId`, `cwd`, `title`,
    `updatedAt`), or [] when it cannot list."""
    command = list(getattr(spec.settings, "command", []) or [])
    binary = shutil.which(command[0]) if command and os.sep not in command[0] else None
    binary = binary or (command[0] if command else None)
    if binary is None or not os.access(binary, os.X_OK):
        return []
    env = {**os.environ, **getattr(spec.settings, "env", {})}
    process = await asyncio.create_subprocess_exec(
        binary, *command[1:], cwd=str(cwd), env=env,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    assert process.stdin is not None and process.stdout is not None
    conn = ClientSideConnection(_NoCallbacks(), process.stdin, process.stdout)
    try:
        return await asyncio.wait_for(_listed(conn), LIST_TIMEOUT_S)
    except (TimeoutError, ConnectionError, RequestError, ValueError) as exc:
        log.warning("agent %s: session/list failed: %s", spec.name, exc or type(exc).__name__)
        return []
    finally:
        try:
            await asyncio.wait_for(conn.close(), GRACE_S)
        except Exception as exc:  # the agent is ended below all the same; said once
            log.info("agent %s: closing its listing connection: %r", spec.name, exc)
        process.stdin.close()
        await _end(process)


async def _listed(conn: ClientSideConnection) -> list[dict[str, Any]]:
    initialized = await conn.initialize(
        protocol_version=PROTOCOL_VERSION,
        client_capabilities=ClientCapabilities(),
        client_info=Implementation(name="rawp-client", version="0.1.0"),
    )
    capabilities = initialized.agent_capabilities
    sessions = capabilities.session_capabilities if capabilities else None
    if sessions is None or sessions.list is None:
        return []  # rule 1
    found: list[dict[str, Any]] = []
    cursor = None
    for _ in range(PAGES):
        page = await conn.list_sessions(cursor=cursor)
        found += [info.model_dump(by_alias=True) for info in page.sessions]
        cursor = page.next_cursor
        if not cursor:
            break
    return found


async def _end(process: asyncio.subprocess.Process) -> None:
    if process.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        process.terminate()
    try:
        await asyncio.wait_for(process.wait(), GRACE_S)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
