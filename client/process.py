"""Agent child processes: each in its own process group, ended as a group (RAWP §5.2).

`spawn` starts the process with `start_new_session=True`, so the agent and everything it
starts share one process group whose id is the agent's pid. `terminate_group` sends SIGTERM
to the whole group, waits `grace` seconds for the agent to exit, then SIGKILLs the group
(C-SESS-06), and always awaits the agent so that no zombie is left behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Mapping, Sequence
from pathlib import Path

log = logging.getLogger(__name__)


async def spawn(
    argv: Sequence[str], *, cwd: Path, env: Mapping[str, str]
) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        env=dict(env),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
        limit=16 * 1024 * 1024,  # one jsonl line may be long (a big diff)
    )


def _signal_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


async def terminate_group(proc: asyncio.subprocess.Process, grace: float) -> int:
    """SIGTERM the group, SIGKILL it after `grace` s; return the exit status (reaped)."""
    if proc.returncode is None:
        _signal_group(proc.pid, signal.SIGTERM)
        try:
            await asyncio.wait_for(asyncio.shield(proc.wait()), grace)
        except TimeoutError:
            log.info("agent pid %s ignored SIGTERM for %ss; sending SIGKILL", proc.pid, grace)
            _signal_group(proc.pid, signal.SIGKILL)
    status = await proc.wait()
    # Anything the agent left running in its group goes with it.
    _signal_group(proc.pid, signal.SIGKILL)
    return status
