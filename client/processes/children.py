"""Agent child processes: each in its own process group, ended as a group (RAWP §5.2).

Rules:

1. `AgentProcesses.spawn` starts the agent under `client/processes/supervisor.py` in a new session:
   the supervisor leads the process group, the agent and everything it starts are in it,
   and the whole group dies within a few seconds of the client dying, SIGKILL included
   (issue 14 §3; the supervisor's docstring says how). The agent's stdio pipes are the ones
   the caller reads: the supervisor proxies nothing.
2. `spawn` returns once the agent's `execvpe` has run; a command that cannot be executed
   raises the `OSError` it raised there (FileNotFoundError, PermissionError…), as before.
3. Each running group is recorded in the state directory (`client.processes.groups`) from spawn
   until it has ended, so a client that starts after a crash can end what it left.
4. `terminate` sends SIGTERM to the whole group, waits `grace` seconds for the supervisor
   (which stays until the agent exits and leaves with its status), then SIGKILLs the group
   (C-SESS-06). `reap` waits for an agent that ends by itself. Both await the process so no
   zombie is left, then SIGKILL whatever the agent left in its group, and drop the record.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from client.processes.groups import GroupRecord

log = logging.getLogger(__name__)

SUPERVISOR = str(Path(__file__).with_name("supervisor.py"))

LINE_LIMIT = 16 * 1024 * 1024  # one stdout line of an agent may be long (a big diff)


class AgentProcesses:
    """Starts and ends agent process groups; keeps `record` (None: nothing recorded)."""

    def __init__(self, record: GroupRecord | None = None) -> None:
        self.record = record

    async def spawn(
        self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str]
    ) -> asyncio.subprocess.Process:
        read_end, write_end = os.pipe()
        try:
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-I",
                "-S",
                SUPERVISOR,
                str(write_end),
                str(os.getpid()),
                "--",
                *argv,
                cwd=cwd,
                env=dict(env),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
                pass_fds=(write_end,),
                limit=LINE_LIMIT,
            )
        except BaseException:
            os.close(read_end)
            raise
        finally:
            os.close(write_end)
        if self.record is not None:
            self.record.add(proc.pid)
        try:
            problem = await _read_to_end(read_end)
        except BaseException:
            await self.terminate(proc, 0)
            raise
        if problem:  # rule 2: the agent's exec failed; the supervisor has exited 127
            await self.reap(proc)
            errno = int(problem)
            raise OSError(errno, os.strerror(errno), argv[0])
        return proc

    async def terminate(self, proc: asyncio.subprocess.Process, grace: float) -> int:
        """SIGTERM the group, SIGKILL it after `grace` s; return the exit status (reaped)."""
        if proc.returncode is None:
            _signal_group(proc.pid, signal.SIGTERM)
            try:
                await asyncio.wait_for(asyncio.shield(proc.wait()), grace)
            except TimeoutError:
                log.info("agent pid %s ignored SIGTERM for %ss; sending SIGKILL", proc.pid, grace)
                _signal_group(proc.pid, signal.SIGKILL)
        return await self.reap(proc)

    async def reap(self, proc: asyncio.subprocess.Process) -> int:
        """Wait for the agent to end; then end what it left in its group (rule 4)."""
        try:
            status = await proc.wait()
        finally:
            # Anything the agent left running in its group goes with it. Cancelled while
            # waiting (the session is ending), the group is killed all the same.
            _signal_group(proc.pid, signal.SIGKILL)
            if self.record is not None:
                self.record.remove(proc.pid)
        return status


async def _read_to_end(fd: int) -> bytes:
    """Everything written to the pipe `fd` until its last writer closes it."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(fd, "rb", buffering=0)
    )
    try:
        return await reader.read()
    finally:
        transport.close()


def _signal_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)
