"""The record of running agent process groups, kept so a restarted client can end them.

Rules (issue 14 §3):

1. A group is recorded by its leader's pid (the supervisor, whose pid is the group id) and
   the leader's start time from `/proc/<pid>/stat`: a pid the kernel has since given to
   another process has another start time, and such a process is never signalled.
2. The file (`agent_groups.json` in the state directory) is written like the client's
   secrets: mode 0600, through a temporary file and `os.replace`, so a crash never leaves
   half a record. It names the client that wrote it (pid and start time, like a group). A
   record that cannot be written is logged and the agent runs all the same: the supervisor
   still ties it to this client; only the sweep after a crash would miss it.
3. `end_leftovers`, run once when the client starts, ends every group a previous run left:
   SIGTERM to the group, SIGKILL after `grace` seconds (or at once when the leader is gone),
   then the record is emptied. A leader that is gone may have left members behind (only if
   the supervisor was killed together with the client): those are the processes still in
   that group, which the kernel keeps from reusing the id while any of them lives. A record
   whose client is still alive belongs to another client started on the same directory by
   mistake: its groups are left alone, with a warning.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
from pathlib import Path

from client.state import write_secret

log = logging.getLogger(__name__)

RECORD_FILE = "agent_groups.json"


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot, or None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()  # the name before ")" may hold spaces
    if fields[0] in ("Z", "X"):  # a zombie has ended; only its parent's wait is missing
        return None
    return int(fields[19])


def _group_members(pgid: int) -> list[int]:
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError):
            fields = Path(f"/proc/{entry}/stat").read_text().rpartition(")")[2].split()
            if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
                members.append(int(entry))
    return members


class GroupRecord:
    def __init__(self, state_dir: Path) -> None:
        self.file = state_dir / RECORD_FILE
        self.groups: dict[int, int] = {}  # leader pid → its start time
        self._unwritable = False

    def add(self, pid: int) -> None:
        started = start_time(pid)
        if started is None:  # already over: nothing to end later
            return
        self.groups[pid] = started
        self._save()

    def remove(self, pid: int) -> None:
        if self.groups.pop(pid, None) is not None:
            self._save()

    def _save(self) -> None:
        me = os.getpid()
        record = {
            "client": {"pid": me, "start": start_time(me)},
            "groups": [{"pid": pid, "start": start} for pid, start in self.groups.items()],
        }
        try:
            write_secret(self.file, json.dumps(record).encode())
        except OSError as exc:  # rule 2: the agent runs; say once what is not recorded
            if not self._unwritable:
                log.warning("cannot record agent process groups in %s: %s", self.file, exc)
            self._unwritable = True
        else:
            self._unwritable = False

    def _load(self) -> tuple[dict[str, int] | None, dict[int, int]]:
        try:
            data = json.loads(self.file.read_text())
            client = data.get("client")
            writer = {"pid": int(client["pid"]), "start": int(client["start"])} if client else None
            return writer, {int(g["pid"]): int(g["start"]) for g in data["groups"]}
        except FileNotFoundError:
            return None, {}
        except (ValueError, KeyError, TypeError) as exc:
            log.warning("%s is not a record of agent groups (%s); ignoring it", self.file, exc)
            return None, {}

    async def end_leftovers(self, grace: float) -> int:
        """Rule 3: end the groups a previous run recorded; return how many were live."""
        writer, left = self._load()
        alive = writer is not None and start_time(writer["pid"]) == writer["start"]
        if alive and writer["pid"] != os.getpid():
            log.warning(
                "another client (pid %s) runs on %s; its agents are left alone",
                writer["pid"],
                self.file.parent,
            )
            return 0
        ended = 0
        for pid, started in left.items():
            now = start_time(pid)
            if now is not None and now != started:
                continue  # rule 1: the pid belongs to another process now
            if now is not None:
                log.warning("ending agent process group %s left by a previous run", pid)
                _signal_group(pid, signal.SIGTERM)
                await _exited(pid, grace)
                _signal_group(pid, signal.SIGKILL)
                ended += 1
            for member in _group_members(pid):  # members whose leader died before them
                log.warning("ending pid %s left in agent process group %s", member, pid)
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(member, signal.SIGKILL)
                ended += 1
        if left:
            self._save()  # what this run has started so far (nothing, at start-up)
        return ended


async def _exited(pid: int, limit: float) -> None:
    """Wait until `pid` (not our child) has exited, at most `limit` seconds (a pidfd)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    except (AttributeError, OSError):  # no pidfd here (Linux < 5.3): SIGKILL at once
        return
    loop = asyncio.get_running_loop()
    gone = asyncio.Event()
    loop.add_reader(fd, gone.set)
    try:
        await asyncio.wait_for(gone.wait(), limit)
    except TimeoutError:
        log.info("agent process group %s ignored SIGTERM for %ss; sending SIGKILL", pid, limit)
    finally:
        loop.remove_reader(fd)
        os.close(fd)


def _signal_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)
