"""The agent supervisor: ties an agent's whole process group to the client (issue 14 §3).

`client.processes.children` runs every agent as

    python -I -S client/processes/supervisor.py STATUS_FD CLIENT_PID -- argv…

in a new session, so this process leads the agent's process group. Rules:

1. It asks the kernel for a signal when its parent dies (`PR_SET_PDEATHSIG`), then checks
   `getppid()` against CLIENT_PID: a client that died before the request was in place is
   seen here, and no agent is started.
2. It forks the agent, which inherits stdin/stdout/stderr as they are (no byte is proxied)
   and the default signal dispositions, and which gets `PR_SET_PDEATHSIG` = SIGKILL itself.
   Whether `execvpe` worked is written to STATUS_FD (empty: it worked; else the errno), so
   the client reports a missing command as it did before there was a supervisor.
3. While the client lives, a signal to the group (the client's SIGTERM, then SIGKILL after
   its grace period) reaches the agent directly; the supervisor outlasts SIGTERM and leaves
   with the agent's exit status (a signal death is re-raised on itself).
4. When the client dies, by any means: SIGTERM to the group, then SIGKILL to the group
   GRACE_S later or as soon as the agent has exited — grandchildren included. Well within
   the 5 s the issue allows.

PR_SET_PDEATHSIG fires when the *thread* that forked us ends; the client starts agents from
its event loop thread, which lives as long as the client. Linux only (prctl); elsewhere the
supervisor still forwards the status, and the client's start-up sweep (client.processes.groups)
ends what a dead client left.

Only the standard library, loaded without `site` (-I -S): it starts once per agent process.
"""

import contextlib
import os
import signal
import sys

PR_SET_PDEATHSIG = 1
PARENT_DIED = signal.SIGUSR1
GRACE_S = 2.0
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_orphaned: list[bool] = []  # set once the client is gone (rule 4)


def _prctl_pdeathsig(sig: int) -> bool:
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    except (OSError, AttributeError):  # not Linux: the start-up sweep is the only guard
        return False


def _kill_group(sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(0, sig)


def _parent_died(signum: int, frame: object) -> None:
    # Rule 4. SIGTERM reaches this process too; its handler below ignores it.
    _kill_group(signal.SIGTERM)
    signal.setitimer(signal.ITIMER_REAL, GRACE_S)
    _orphaned.append(True)


def _grace_over(signum: int, frame: object) -> None:
    _kill_group(signal.SIGKILL)  # this process included: nobody waits for its status


def _start(argv: list[str], status_fd: int, me: int) -> int:
    child = os.fork()
    if child == 0:  # the agent (rule 2)
        try:
            for sig in (*FORWARDED, PARENT_DIED, signal.SIGALRM):
                signal.signal(sig, signal.SIG_DFL)
            _prctl_pdeathsig(signal.SIGKILL)
            if os.getppid() != me:
                os._exit(1)
            os.execvpe(argv[0], argv, os.environ)
        except OSError as exc:
            os.write(status_fd, str(exc.errno or 0).encode())
        os._exit(127)
    return child


def main(args: list[str]) -> int:
    status_fd, client_pid, argv = int(args[0]), int(args[1]), args[3:]
    os.set_inheritable(status_fd, False)  # closed by the agent's exec: EOF means it started
    for sig in FORWARDED:  # rule 3: the agent answers these; we wait for it
        signal.signal(sig, lambda signum, frame: None)
    signal.signal(PARENT_DIED, _parent_died)
    signal.signal(signal.SIGALRM, _grace_over)
    _prctl_pdeathsig(PARENT_DIED)
    if os.getppid() != client_pid:  # rule 1: the client is already gone
        os.close(status_fd)
        return 1
    child = _start(argv, status_fd, os.getpid())
    os.close(status_fd)
    # Our copies of the agent's stdio would only delay EOF on the client's side.
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    _, status = os.waitpid(child, 0)
    if _orphaned:
        _grace_over(signal.SIGALRM, None)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        return 128 + sig
    return os.WEXITSTATUS(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
